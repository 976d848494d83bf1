"""Quantities with units. The unit used when none is given is a module-wide setting."""

_DEFAULT_UNIT = "pcs"


def set_default_unit(unit):
    """Sets the unit format_quantity uses when it is given none (e.g. "kg" for a grocery)."""
    global _DEFAULT_UNIT
    _DEFAULT_UNIT = unit


def default_unit():
    return _DEFAULT_UNIT


def reset_default_unit():
    set_default_unit("pcs")


def format_quantity(amount, unit=None):
    unit = unit or _DEFAULT_UNIT
    if isinstance(amount, float) and amount.is_integer():
        amount = int(amount)
    return f"{amount} {unit}"


def parse_quantity(text):
    """Parses "3 kg" into (3, "kg") and "3" into (3, the default unit)."""
    parts = text.split()
    if not parts or len(parts) > 2:
        raise ValueError(f"not a quantity: {text!r}")
    number = float(parts[0])
    if number.is_integer():
        number = int(number)
    return number, parts[1] if len(parts) == 2 else _DEFAULT_UNIT
