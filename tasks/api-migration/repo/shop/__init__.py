"""A small shop: prices, carts, bundles, invoices, promotions, reports and shipping."""
