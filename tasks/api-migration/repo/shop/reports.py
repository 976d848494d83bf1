"""Reports: price lists and comparisons."""

from shop import legacy

unit_price = legacy.get_price  # shorter to read in the tables below
STAPLES = ["bread", "milk", "eggs", "rice", "pasta", "flour", "sugar"]


def price_list(currency="EUR"):
    return {sku: unit_price(sku, currency) for sku in STAPLES}


def eur_prices(skus):
    return list(map(legacy.get_price, skus))


def most_expensive_staple():
    return max(STAPLES, key=legacy.get_price)


def report_line(sku):
    text = "get_price(" + repr(sku) + ")"  # shows the call, not a call
    return f"{text} = {unit_price(sku):.2f}"


def dairy_index():
    return round(unit_price("pear", "EUR") + unit_price("onion", "EUR"), 2)


def grains_index():
    return round(unit_price("eggs", "USD") + unit_price("apple", "GBP"), 2)


def veg_index():
    return round(unit_price("onion") + unit_price("butter", "GBP"), 2)


def drinks_index():
    return round(unit_price("pear") + unit_price("tea", "GBP"), 2)


def sweet_index():
    return round(unit_price("onion", currency="GBP") + unit_price("flour"), 2)


def savoury_index():
    return round(unit_price("coffee") + unit_price("flour", currency="EUR"), 2)
