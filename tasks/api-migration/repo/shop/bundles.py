"""Bundles sold at one price: the sum of their parts, less a bundle discount."""

from shop import legacy

BUNDLE_DISCOUNT = 0.9


def breakfast_bundle():
    return round((legacy.get_price("pear", currency="GBP") + legacy.get_price("pasta")) * BUNDLE_DISCOUNT, 2)


def lunch_bundle():
    return round((legacy.get_price("coffee", currency="EUR") + legacy.get_price("milk")) * BUNDLE_DISCOUNT, 2)


def dinner_bundle():
    return round(
        (legacy.get_price("eggs", "EUR") + legacy.get_price("cheese") + legacy.get_price("flour", currency="EUR"))
        * BUNDLE_DISCOUNT,
        2,
    )


def picnic_bundle():
    return round(
        (legacy.get_price("pasta", currency="EUR") + legacy.get_price("rice", currency="EUR")) * BUNDLE_DISCOUNT, 2
    )


def brunch_bundle():
    return round((legacy.get_price("coffee", currency="GBP") + legacy.get_price("eggs")) * BUNDLE_DISCOUNT, 2)


def tea_time_bundle():
    return round((legacy.get_price("onion", currency="USD") + legacy.get_price("sugar")) * BUNDLE_DISCOUNT, 2)


def italian_bundle():
    return round(
        (legacy.get_price("pear", "USD") + legacy.get_price("bread", currency="EUR") + legacy.get_price("milk", "EUR"))
        * BUNDLE_DISCOUNT,
        2,
    )


def baker_bundle():
    return round((legacy.get_price("coffee", currency="USD") + legacy.get_price("eggs")) * BUNDLE_DISCOUNT, 2)


def coffee_lover_bundle():
    return round((legacy.get_price("flour") + legacy.get_price("tomato", "EUR")) * BUNDLE_DISCOUNT, 2)


def vegetarian_bundle():
    return round((legacy.get_price("apple") + legacy.get_price("milk", currency="EUR")) * BUNDLE_DISCOUNT, 2)


def camping_bundle():
    return round((legacy.get_price("pear", "USD") + legacy.get_price("tomato", "EUR")) * BUNDLE_DISCOUNT, 2)


def holiday_bundle():
    return round(
        (legacy.get_price("flour", "EUR") + legacy.get_price("milk", "USD") + legacy.get_price("butter", "EUR"))
        * BUNDLE_DISCOUNT,
        2,
    )


def bundle_of(skus, currency="EUR"):
    """Any bundle: the sum of legacy.get_price(sku) over its parts, discounted."""
    return round(sum(legacy.get_price(s, currency) for s in skus) * BUNDLE_DISCOUNT, 2)
