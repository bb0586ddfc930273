"""parse_size and format_size: the suffixes of the header, and clear refusals."""

import pytest

from vramkit import format_size, parse_size


@pytest.mark.parametrize(
    "text, expected",
    [
        ("70GiB", 70 * 2**30),
        ("512MiB", 512 * 2**20),
        ("1KiB", 1024),
        ("2TiB", 2 * 2**40),
        ("1KB", 1000),
        ("3MB", 3 * 10**6),
        ("1GB", 10**9),
        ("1TB", 10**12),
        ("17B", 17),
        ("4096", 4096),
        ("1.5GiB", 3 * 2**29),
        (" 8 MiB ", 8 * 2**20),
        ("0B", 0),
        (".5KiB", 512),
    ],
)
def test_parses_every_suffix(text, expected):
    assert parse_size(text) == expected


def test_int_is_bytes():
    assert parse_size(123) == 123


@pytest.mark.parametrize("text", ["70gib", "70GIB", "1kb", "5mib"])
def test_suffix_case_is_checked_and_the_spelling_suggested(text):
    with pytest.raises(ValueError) as err:
        parse_size(text)
    message = str(err.value)
    assert "case-sensitive" in message
    assert "did you mean" in message


@pytest.mark.parametrize("text", ["70XB", "GiB", "", "1.2.3GiB", "-1GiB", "ten MiB"])
def test_bad_text_names_the_value_and_the_suffixes(text):
    with pytest.raises(ValueError) as err:
        parse_size(text)
    assert repr(text) in str(err.value)


def test_fraction_of_a_byte_is_refused():
    with pytest.raises(ValueError, match="whole number of bytes"):
        parse_size("0.1KiB")


def test_negative_and_huge_are_refused():
    with pytest.raises(ValueError, match="negative"):
        parse_size(-1)
    with pytest.raises(ValueError, match="2\\*\\*64"):
        parse_size(2**64)
    with pytest.raises(ValueError, match="2\\*\\*64"):
        parse_size("16777216TiB")


@pytest.mark.parametrize("value", [1.5, None, True, [1]])
def test_wrong_types_are_type_errors(value):
    with pytest.raises(TypeError, match="number of bytes"):
        parse_size(value)


def test_what_names_the_argument():
    with pytest.raises(ValueError, match="^budget "):
        parse_size("lots", "budget")


def test_format_size():
    assert format_size(0) == "0 B"
    assert format_size(1023) == "1023 B"
    assert format_size(3 * 2**29) == "1.50 GiB"
    assert format_size(5 * 2**40) == "5.00 TiB"
