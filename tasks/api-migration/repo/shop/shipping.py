"""Shipping: parcels are insured at the value of their contents."""

import shop.legacy

INSURANCE_RATE = 0.015


def parcel_value(contents, currency="EUR"):
    return round(sum(shop.legacy.get_price(sku, currency) * qty for sku, qty in contents), 2)


def insurance(contents, currency="EUR"):
    return round(parcel_value(contents, currency) * INSURANCE_RATE, 2)


def small_parcel_value():
    return round(
        shop.legacy.get_price("bread", currency="GBP") * 5
        + shop.legacy.get_price("rice", currency="USD") * 2
        + shop.legacy.get_price("onion", "USD") * 1,
        2,
    )


def medium_parcel_value():
    return round(
        shop.legacy.get_price("apple", "USD") * 2
        + shop.legacy.get_price("eggs", "EUR") * 10
        + shop.legacy.get_price("flour", "USD") * 5,
        2,
    )


def large_parcel_value():
    return round(shop.legacy.get_price("tomato", currency="EUR") * 1 + shop.legacy.get_price("eggs", "GBP") * 10, 2)


def fragile_parcel_value():
    return round(shop.legacy.get_price("tomato", "USD") * 2 + shop.legacy.get_price("apple") * 2, 2)


def export_parcel_value():
    return round(
        shop.legacy.get_price("cheese") * 1
        + shop.legacy.get_price("rice", currency="EUR") * 5
        + shop.legacy.get_price("pear", currency="USD") * 5,
        2,
    )
