"""The old price lookup, kept while callers move to shop.pricing.price_of.

get_price(sku, currency) is price_of(sku, currency=currency): same prices, but the currency may be
passed by position here and must be passed by keyword there.
"""

import warnings

from shop.pricing import price_of


def get_price(sku, currency="EUR"):
    """Deprecated: use shop.pricing.price_of(sku, currency=...)."""
    warnings.warn("get_price is deprecated: use shop.pricing.price_of", DeprecationWarning, 2)
    return price_of(sku, currency=currency)
