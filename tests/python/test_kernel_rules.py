"""The rules over what ran during the timed call, on synthetic profiler data (no GPU needed)."""

from harness.kernel_rules import Kernel, TritonLaunch, check, check_floor, parse_chrome_trace

CAND = "/cand"
OWN = [TritonLaunch("my_kernel", "/cand/kernel.py")]


def rules(**kw):
    args = dict(kernels=[], cpu_ops=[], triton_launches=OWN, candidate_dir=CAND, main_stream=7)
    args.update(kw)
    return {v.rule for v in check(**args)}


def test_own_triton_kernel_on_caller_stream_is_clean():
    assert rules(kernels=[Kernel("my_kernel", 7, 100.0)]) == set()


def test_work_on_another_stream_is_a_violation():
    ks = [Kernel("my_kernel", 7, 1.0), Kernel("my_kernel", 13, 100.0)]
    assert "other_stream" in rules(kernels=ks)


def test_cublas_gemm_doing_the_work_is_a_violation():
    ks = [Kernel("my_kernel", 7, 1.0), Kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", 7, 90.0)]
    r = rules(kernels=ks)
    assert "library_kernel" in r and "compute_not_own" in r


def test_flash_attention_kernel_is_a_violation():
    ks = [Kernel("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<...>>", 7, 50.0)]
    assert "library_kernel" in rules(kernels=ks, triton_launches=[])


def test_own_kernel_named_like_flash_is_not_a_library_kernel():
    ks = [Kernel("flash_decode_kernel", 7, 50.0)]
    assert rules(kernels=ks, triton_launches=[TritonLaunch("flash_decode_kernel", "/cand/kernel.py")]) == set()


def test_matmul_operators_are_a_violation():
    assert "library_compute" in rules(cpu_ops=["aten::empty", "aten::einsum", "aten::bmm"])


def test_glue_operators_are_allowed():
    assert rules(kernels=[Kernel("my_kernel", 7, 1.0)], cpu_ops=["aten::empty", "aten::zeros", "aten::copy_"]) == set()


def test_triton_kernel_from_outside_the_candidate_is_foreign():
    r = rules(triton_launches=[TritonLaunch("chunk_kda_fwd", "/site-packages/fla/ops/kda/chunk.py")])
    assert "foreign_kernel" in r and "no_own_kernel" in r


def test_torch_compile_kernels_are_not_own():
    ks = [Kernel("triton_poi_fused_add_0", 7, 10.0)]
    assert "library_kernel" in rules(kernels=ks, triton_launches=[])


def test_baseline_kernel_is_a_violation():
    ks = [Kernel("chunk_kda_fwd_kernel_intra", 7, 10.0)]
    assert "baseline_kernel" in rules(kernels=ks, baseline_kernels={"chunk_kda_fwd_kernel_intra"})


def test_result_faster_than_the_floor_is_a_violation():
    assert check_floor(0.001, 0.0024)[0].rule == "faster_than_floor"
    assert check_floor(0.003, 0.0024) == []


def test_chrome_trace_is_parsed_with_streams_in_time_order():
    trace = {
        "traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "b", "ts": 20, "dur": 5, "args": {"stream": 9}},
            {"ph": "X", "cat": "kernel", "name": "a", "ts": 10, "dur": 3, "args": {"stream": 7}},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 1},
            {"ph": "i", "cat": "kernel", "name": "ignored"},
        ]
    }
    ks, ops = parse_chrome_trace(trace)
    assert [k.name for k in ks] == ["a", "b"] and ks[1].stream == 9 and ops == ["aten::mm"]
