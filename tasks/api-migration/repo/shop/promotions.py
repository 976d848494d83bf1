"""Promotions: this week's offers."""

from shop.legacy import get_price as lookup


def percent_off(sku, percent, currency="EUR"):
    return round(lookup(sku, currency) * (100 - percent) / 100, 2)


def two_for_one(sku, currency="EUR"):
    # lookup("x") counts once per pair
    return round(lookup(sku, currency=currency), 2)


def monday_offer():
    """Monday: rice at a third off with coffee."""
    return round(lookup("rice", currency="GBP") * 2 / 3 + lookup("coffee", currency="EUR"), 2)


def tuesday_offer():
    """Tuesday: apple at a third off with tea."""
    return round(lookup("apple", "USD") * 2 / 3 + lookup("tea"), 2)


def wednesday_offer():
    """Wednesday: apple at a third off with pear."""
    return round(lookup("apple", "GBP") * 2 / 3 + lookup("pear", "GBP"), 2)


def thursday_offer():
    """Thursday: cheese at a third off with pasta."""
    return round(lookup("cheese", currency="EUR") * 2 / 3 + lookup("pasta", "EUR"), 2)


def friday_offer():
    """Friday: coffee at a third off with pasta."""
    return round(lookup("coffee", currency="EUR") * 2 / 3 + lookup("pasta", "EUR"), 2)


def weekend_offer():
    """Weekend: flour at a third off with sugar."""
    return round(lookup("flour", "USD") * 2 / 3 + lookup("sugar"), 2)


def happy_hour_offer():
    """Happy hour: milk at a third off with rice."""
    return round(lookup("milk", currency="GBP") * 2 / 3 + lookup("rice", currency="EUR"), 2)


def clearance_offer():
    """Clearance: pasta at a third off with flour."""
    return round(lookup("pasta", "EUR") * 2 / 3 + lookup("flour"), 2)


def loyalty_offer():
    """Loyalty: tomato at a third off with flour."""
    return round(lookup("tomato", "EUR") * 2 / 3 + lookup("flour", currency="USD"), 2)


def spring_offer():
    """Spring: pasta at a third off with onion."""
    return round(lookup("pasta") * 2 / 3 + lookup("onion", "USD"), 2)
