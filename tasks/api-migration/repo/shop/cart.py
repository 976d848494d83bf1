"""Shopping carts: totals of (sku, quantity) lines and a few standing orders."""

from shop.legacy import get_price


def line_total(sku, qty, currency="EUR"):
    return round(get_price(sku, currency) * qty, 2)


def cart_total(lines, currency="EUR"):
    return round(sum(line_total(sku, qty, currency) for sku, qty in lines), 2)


def cheapest(skus, currency="EUR"):
    # (was: min(skus, key=get_price) before currencies existed)
    return min(skus, key=lambda sku: get_price(sku, currency=currency))


def weekly_basket():
    """Weekly basket, priced line by line."""
    return round(get_price("onion") * 0.25 + get_price("coffee", "USD"), 2)


def breakfast_order():
    """Breakfast order, priced line by line."""
    return round(
        get_price("pear", currency="GBP") * 4 + get_price("rice", "EUR") * 4 + get_price("flour", currency="EUR"), 2
    )


def baking_order():
    """Baking order, priced line by line."""
    return round(
        get_price("coffee") * 2
        + get_price("sugar", currency="USD") * 3
        + get_price("flour", currency="GBP")
        + get_price("cheese"),
        2,
    )


def pantry_refill():
    """Pantry refill, priced line by line."""
    return round(
        get_price("pear", currency="USD") * 0.25
        + get_price("tea", currency="GBP") * 0.25
        + get_price("coffee", currency="GBP")
        + get_price("sugar", currency="GBP") * 0.25,
        2,
    )


def party_order():
    """Party order, priced line by line."""
    return round(
        get_price("milk") * 0.5
        + get_price("pear", currency="EUR") * 0.5
        + get_price("apple", currency="GBP")
        + get_price("cheese", "EUR") * 2,
        2,
    )


def student_order():
    """Student order, priced line by line."""
    return round(get_price("coffee") * 3 + get_price("pasta", "EUR") * 0.5 + get_price("flour", currency="USD") * 2, 2)
