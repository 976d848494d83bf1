"""The shop's behaviour, which the migration must keep: every standing order, bundle, offer,
report and parcel priced as before (tests/expected.json), and the functions that take arguments."""

import importlib
import inspect
import json
import unittest
import warnings
from pathlib import Path

EXPECTED = json.loads((Path(__file__).parent / "expected.json").read_text())
MODULES = ["bundles", "cart", "invoice", "promotions", "reports", "shipping"]


class PricedAsBefore(unittest.TestCase):
    def test_every_standing_price_is_unchanged(self):
        for name in MODULES:
            module = importlib.import_module(f"shop.{name}")
            for fn_name, expected in EXPECTED[name].items():
                with self.subTest(f"{name}.{fn_name}"):
                    self.assertEqual(getattr(module, fn_name)(), expected)

    def test_no_standing_price_was_removed_or_added(self):
        for name in MODULES:
            module = importlib.import_module(f"shop.{name}")
            zero_arg = {
                n
                for n, f in vars(module).items()
                if inspect.isfunction(f) and f.__module__ == module.__name__ and not inspect.signature(f).parameters
            }
            self.assertEqual(zero_arg, set(EXPECTED[name]), name)


class WithArguments(unittest.TestCase):
    def setUp(self):
        warnings.simplefilter("ignore", DeprecationWarning)

    def test_cart(self):
        from shop import cart

        self.assertEqual(cart.line_total("milk", 3, "USD"), 3.72)
        self.assertEqual(cart.cart_total([("apple", 4), ("bread", 1)], "GBP"), 3.45)
        self.assertEqual(cart.cheapest(["coffee", "onion", "tea"], "GBP"), "onion")

    def test_bundles(self):
        from shop import bundles

        self.assertEqual(bundles.bundle_of(["milk", "bread"], "USD"), 3.26)

    def test_invoice(self):
        from shop import invoice

        bill = invoice.invoice([("coffee", 2), ("tea", 1)], "GBP")
        self.assertEqual(bill["total"], 17.73)
        self.assertEqual(bill["rows"][0], {"sku": "coffee", "qty": 2, "net": 11.86, "vat": 2.37})

    def test_promotions(self):
        from shop import promotions

        self.assertEqual(promotions.percent_off("cheese", 25, "USD"), 3.85)
        self.assertEqual(promotions.two_for_one("butter"), 2.6)

    def test_reports(self):
        from shop import reports

        self.assertEqual(reports.price_list("GBP")["eggs"], 2.67)
        self.assertEqual(reports.eur_prices(["rice", "tea"]), [1.8, 3.4])
        self.assertEqual(reports.most_expensive_staple(), "eggs")
        self.assertEqual(reports.report_line("flour"), "get_price('flour') = 1.05")

    def test_shipping(self):
        from shop import shipping

        self.assertEqual(shipping.parcel_value([("flour", 10), ("sugar", 5)], "USD"), 17.8)
        self.assertEqual(shipping.insurance([("coffee", 10)]), 1.03)

    def test_unknown_sku_is_a_key_error(self):
        from shop import cart

        with self.assertRaises(KeyError):
            cart.line_total("caviar", 1)


if __name__ == "__main__":
    unittest.main()
