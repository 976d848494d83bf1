from inventory import units


def test_grocery_mode_shows_kilograms():
    units.set_default_unit("kg")
    assert units.format_quantity(3) == "3 kg"


def test_default_unit_is_pieces():
    assert units.format_quantity(3) == "3 pcs"


def test_explicit_unit_wins():
    assert units.format_quantity(2.0, "l") == "2 l"


def test_parse_round_trips():
    assert units.parse_quantity("2.5 kg") == (2.5, "kg")
    assert units.parse_quantity(units.format_quantity(4, "box")) == (4, "box")
