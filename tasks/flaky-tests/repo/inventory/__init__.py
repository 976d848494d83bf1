"""A small stock-keeping library: quantities with units, a thread-safe(?) stock counter, and a
rate limiter for the stock API."""
