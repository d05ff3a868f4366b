"""Step 1 of reading: an SGF file's bytes become one ``str`` (see :func:`decode_text`)."""

from __future__ import annotations

import codecs
import re
from collections import Counter

_BOMS = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
# No look-behind for "not part of a longer name": it would cost re its literal
# prefix search, 100x slower; _declared_codec checks the byte before instead.
_CA_RE = re.compile(rb"CA\s*\[\s*([A-Za-z0-9_.:-]{1,40})\s*\]")
# Decode a label's codec as its usual superset: files labelled GB2312 hold GBK
# characters, EUC-KR ones CP949, Shift_JIS ones CP932; ASCII says nothing.
_SUPERSETS = {
    "gb2312": "gb18030", "gbk": "gb18030", "euc_kr": "cp949",
    "shift_jis": "cp932", "ascii": "utf-8",
}
_DROP_ASCII = dict.fromkeys(range(128))
_FALLBACKS = ("utf-8", "gb18030", "cp949", "cp932", "iso8859-1")
_SINGLE_BYTE_LATIN = ("iso8859-1", "cp1252", "iso8859-15")


def _declared_codec(data: bytes) -> str | None:
    for match in _CA_RE.finditer(data):
        if match.start() == 0 or not 65 <= data[match.start() - 1] <= 90:
            break
    else:
        return None
    try:
        name = codecs.lookup(match.group(1).decode("ascii")).name
        name = _SUPERSETS.get(name, name)
        # Only a codec that keeps SGF's punctuation ASCII can be meant: not UTF-16/32
        # without a BOM, not EBCDIC, not rot13 or base64 (which are not text codecs).
        if "(;[]\\AZaz".encode(name) == b"(;[]\\AZaz":
            return name
    except (LookupError, UnicodeError):
        pass
    return None


def _plausible(text: str, codec: str) -> float:
    """Share of non-ASCII characters that are ordinary in text written in ``codec``:
    each wrong guess tends to land in rare code points (GBK-only ideographs for
    Shift_JIS read as GB18030, half-width katakana for GB2312 read as Shift_JIS,
    U+FFFD for broken UTF-8, C1 controls for Latin-1)."""
    # Counted per distinct character: a list of every one cost 8 bytes and more each.
    counts = Counter(text.translate(_DROP_ASCII))
    total = sum(counts.values())
    if not total:
        return 1.0
    core = {"gb18030": "gb2312", "cp949": "euc_kr", "cp932": "shift_jis"}.get(codec)
    good = 0
    for ch, n in counts.items():
        if core is None:
            good += n if ch.isprintable() and ch != "\ufffd" else 0
            continue
        if codec == "cp932" and "\uff61" <= ch <= "\uff9f":
            continue
        try:
            ch.encode(core)
        except UnicodeEncodeError:
            continue
        good += n
    return good / total


def decode_text(data: bytes) -> tuple[str, str]:
    """The file as text and the codec used.

    Order: a BOM; the declared ``CA[]`` if the bytes decode with it (after UTF-8
    when the label is a Latin one, since UTF-8 filed under a default Latin-1 label
    is common and Latin-1 text is almost never valid UTF-8); UTF-8; then whichever
    of UTF-8-with-damage (the YuanYu exports cut a character in half inside PB/PW),
    GB18030, CP949, CP932 and Latin-1 reads most plausibly, ties going to the
    earlier one. Damaged bytes become U+FFFD.
    """
    for bom, bom_codec in _BOMS:
        if data.startswith(bom):
            return data[len(bom):].decode(bom_codec, "replace"), bom_codec
    declared = _declared_codec(data)
    order = [declared, "utf-8"] if declared not in _SINGLE_BYTE_LATIN else ["utf-8", declared]
    for codec in order:
        if codec is not None:
            try:
                return data.decode(codec), codec
            except UnicodeError:
                pass
    best = ("", "", -1.0)
    for candidate in dict.fromkeys([declared, *_FALLBACKS]):
        if candidate is None:
            continue
        try:
            text = data.decode(candidate, "replace" if candidate == "utf-8" else "strict")
        except UnicodeError:
            continue
        score = _plausible(text, candidate)
        if score > best[2]:
            best = (text, candidate, score)
    return best[0], best[1]


