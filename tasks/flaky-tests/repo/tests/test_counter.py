import threading

from inventory.counter import StockCounter


def test_single_thread_counts():
    c = StockCounter()
    for _ in range(10):
        c.add("pear")
    c.remove("pear", 3)
    assert c.count("pear") == 7


def test_concurrent_adds_are_all_counted():
    c = StockCounter()

    def work():
        for _ in range(200):
            c.add("apple")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert c.count("apple") == 800
