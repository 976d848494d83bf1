"""Invoices: lines with VAT, in the customer's currency."""

import shop.legacy as old_prices

VAT = {"EUR": 0.2, "USD": 0.0, "GBP": 0.2}


def invoice_line(sku, qty, currency):
    net = old_prices.get_price(sku, currency=currency) * qty
    return {"sku": sku, "qty": qty, "net": round(net, 2), "vat": round(net * VAT[currency], 2)}


def invoice(lines, currency):
    rows = [invoice_line(sku, qty, currency) for sku, qty in lines]
    return {"rows": rows, "total": round(sum(r["net"] + r["vat"] for r in rows), 2)}


def monthly_cafe_net():
    return round(
        old_prices.get_price("apple", currency="GBP") * 20 + old_prices.get_price("cheese", currency="EUR") * 10, 2
    )


def monthly_bakery_net():
    return round(
        old_prices.get_price("onion", currency="EUR") * 24 + old_prices.get_price("bread", currency="GBP") * 24, 2
    )


def monthly_canteen_net():
    return round(old_prices.get_price("butter", "GBP") * 50 + old_prices.get_price("pasta", "EUR") * 20, 2)


def monthly_hotel_net():
    return round(old_prices.get_price("coffee", "GBP") * 10 + old_prices.get_price("onion", currency="USD") * 24, 2)


def monthly_school_net():
    return round(
        old_prices.get_price("bread", currency="USD") * 24 + old_prices.get_price("eggs", currency="EUR") * 10, 2
    )


def monthly_office_net():
    return round(old_prices.get_price("rice") * 20 + old_prices.get_price("butter", currency="GBP") * 24, 2)


def monthly_restaurant_net():
    return round(old_prices.get_price("bread", currency="GBP") * 50 + old_prices.get_price("sugar", "USD") * 20, 2)


def monthly_deli_net():
    return round(old_prices.get_price("tea", currency="USD") * 50 + old_prices.get_price("milk") * 10, 2)
