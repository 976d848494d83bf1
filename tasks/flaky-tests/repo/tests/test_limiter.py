import time

from inventory.limiter import RateLimiter


def test_the_call_over_the_limit_is_refused():
    limiter = RateLimiter(limit=5, window=0.25)
    for _ in range(5):
        assert limiter.allow()
        time.sleep(0.01)  # each request does a little work
    assert not limiter.allow()


def test_a_fake_clock_opens_a_new_window():
    now = [0.0]
    limiter = RateLimiter(limit=1, window=1.0, clock=lambda: now[0])
    assert limiter.allow()
    assert not limiter.allow()
    now[0] = 5.0
    assert limiter.allow()
