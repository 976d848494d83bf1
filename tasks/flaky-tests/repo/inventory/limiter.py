"""A rate limiter for the stock API: at most `limit` calls per `window` seconds."""

import time


class RateLimiter:
    def __init__(self, limit, window, clock=time.monotonic):
        self.limit = limit
        self.window = window
        self.clock = clock
        self._window_index = None
        self._count = 0

    def allow(self):
        """True when one more call is allowed now (and counts it)."""
        index = int(self.clock() / self.window)  # windows aligned to the clock
        if index != self._window_index:
            self._window_index = index
            self._count = 0
        if self._count < self.limit:
            self._count += 1
            return True
        return False
