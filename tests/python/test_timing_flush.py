"""The L2 flush between timed calls (harness/timing.py): it reads its whole buffer, writes nothing
but its one-float result, and cannot be switched off by a candidate that patches torch."""

import pytest

torch = pytest.importorskip("torch")

from harness import timing  # noqa: E402


def test_the_flush_is_larger_than_the_l2_of_an_h100_or_h200():
    f = timing.Flusher("cpu")
    assert f.buf.numel() * f.buf.element_size() == timing.FLUSH_BYTES
    assert timing.FLUSH_BYTES > 60 << 20


def test_the_flush_reads_every_part_of_its_buffer_and_writes_none_of_it():
    f = timing.Flusher("cpu")
    step = 1 << 20
    f.buf[::step] = 1.0  # one marked element per 4 MB, the last one near the end
    written = f.buf._version
    f()
    assert f.out.item() == f.buf.numel() // step
    assert f.buf._version == written, "the flush wrote its buffer (dirty lines in L2)"


def test_a_candidate_that_replaces_torch_sum_does_not_stop_the_flush(monkeypatch):
    f = timing.Flusher("cpu")
    f.buf[-1] = 3.0
    monkeypatch.setattr(torch, "sum", lambda *a, **k: None)
    f()
    assert f.out.item() == 3.0
