"""Stock counts, updated from several worker threads at once."""

import time

AUDIT_BATCH = 500  # audit lines kept before they are written out


class StockCounter:
    def __init__(self):
        self.counts = {}
        self.audit = []
        self.flushed = 0

    def add(self, item, n=1):
        current = self.counts.get(item, 0)
        self.audit.append((item, n))
        if len(self.audit) >= AUDIT_BATCH:
            self.flush()
        self.counts[item] = current + n

    def remove(self, item, n=1):
        self.add(item, -n)

    def count(self, item):
        return self.counts.get(item, 0)

    def flush(self):
        time.sleep(0)  # writing the audit lines out (I/O: other threads run meanwhile)
        self.flushed += len(self.audit)
        self.audit.clear()
