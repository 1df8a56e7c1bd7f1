"""Reading an edited item back by its edited regions instead of as a whole.

`safety.as_intended` parses the whole new text of every edited item: about half of a large
render's YAML work goes into reading back text that did not change. `read_back` proves the
same thing from less: it cuts the item's edits into *regions*, each a run of whole entries
of one block mapping or block sequence of the item (as whole lines, the edits inside), and
parses only each region's new text, alone. The item reads back as intended when each
region's entries, put in place of the region's original entries in the item's data, give
exactly `intended(original, ops)`.

Why a region's text means alone what it means in the item: YAML's block structure is set
by indentation. A region starts at the start of a line holding an entry of its collection
X at X's column k, and every other line of it is indented by at least k or blank; the line
after it starts an entry of X at column k, or a line indented less than k (or the item
ends). Parsed in the item, the region's lines open and close their collections relative to
column k, as they do shifted left by k columns and parsed alone; no scalar or collection of
the region can run on into the line after it (a plain scalar continues only on lines
indented deeper than its collection; a block scalar ends at a less indented line; a flow
collection or quoted scalar that is not closed within the region does not parse alone);
and nothing before the region can run on into it (the region's first line starts an entry
at column k, as the original did). What libyaml lets depend on more than that is refused,
and the caller then reads the whole item back: anchors and aliases, tags with directives,
tabs, carriage returns and the other line breaks YAML 1.1 knows (NEL, LS, PS), block scalars
that keep their trailing lines (`|+`, `>+`), lines indented less than the region or the
item (other than blank and comment lines), comment lines right after a region, and
document markers at a region's column.

The parsed entries of a region text are kept per text (`memo`): many items get the same
inserted env block or resources mapping.
"""
from __future__ import annotations

import yaml

from krm_fn.yaml.load import MAX_NODES, Loader, _build_plain, _Refused, plain_key
from krm_fn.yaml.safety import intended
from krm_fn.yaml.spans import content_end, line_end, splice_in

_MAPPING = yaml.MappingNode
_SEQUENCE = yaml.SequenceNode
# any of these in an item's text: the whole item is read back instead (anchors, aliases,
# tabs, CR and the other line breaks of YAML 1.1, a BOM, keep-chomping block headers)
_REFUSED = ("&", "*", "\t", "\r", "\x85", "\u2028", "\u2029", "\ufeff", "|+", ">+")
_MEMO_SIZE = 4096


def read_back(text: str, node, start: int, end: int, edits: list, new_item: str,
              original, ops, memo: dict) -> bool:
    """True when the item whose node `node` spans text[start:end] (its first line starting
    at node's column), with `edits` (span editor edits, offsets into `text`) applied, is
    proven to parse to intended(original, ops) region by region (module docstring); False
    when that is not proven (the caller reads the whole item back: safety.as_intended).
    `new_item`: the item's new text (spans.splice_in of the edits); `memo` (a dict kept for
    one render) holds the parsed region texts."""
    if not edits or memo.get("off"):
        return False
    if 3 * len(new_item) + 1 > MAX_NODES or not _plain_text(
            text, start, end, node.start_mark.column, new_item):
        return False        # (at most 3n + 1 nodes in n characters: load._node_bound)
    regions = _regions(text, node, edits, end)
    if regions is None:
        return False
    data = _Patched(original)
    for region in reversed(regions):        # later entries first: indices stay valid
        entries = _entries_of(text, region, memo)
        if entries is None or not data.put(region, entries):
            return False
    try:
        want = intended(original, ops)
    except (IndexError, KeyError, TypeError):
        return False        # as_intended meets the same and says so
    return data.root == want


def no_directives(text: str) -> bool:
    """True when the document text has no `%` directive line (a %TAG directive changes
    what a tag in a region means, which the region parsed alone would not see), after
    any of the line breaks libyaml knows (LF, CR, NEL, LS, PS)."""
    return not text.startswith("%") and not any(
        brk + "%" in text for brk in ("\n", "\r", "\x85", "\u2028", "\u2029"))


def _plain_text(text: str, start: int, end: int, column: int, new_item: str) -> bool:
    """The item's old and new text hold none of _REFUSED nor a keep-chomping block scalar
    header with an indentation digit, no line of either starts with `---` or `...` at
    `column` (the whole read-back, which shifts the item left by `column`, would read a
    document marker there), and every line of the old one after the first is indented by
    at least `column`, blank, or a comment line."""
    old = text[start:end]
    for s in (old, new_item):
        for ch in _REFUSED:
            if ch in s:
                return False
        if "+" in s and any(f"{c}{d}+" in s for c in "|>" for d in "123456789"):
            return False
    pad = "\n" + " " * column
    for s in (old, new_item):       # safety.as_intended reads such a line as a marker
        if s.startswith(("---", "...")) or pad + "---" in s or pad + "..." in s:
            return False
    return not _shallow(column).search(old)


_SHALLOW: dict = {}


def _shallow(column: int):
    """A pattern for a line (after the first) indented less than `column` that is neither
    blank nor a comment line, compiled on first use (str methods line by line cost ~40
    times more)."""
    got = _SHALLOW.get(column)
    if got is None:
        import re
        got = _SHALLOW[column] = re.compile("\n(?!" + " " * column + ")[ ]*[^ #\n]")
    return got


class _Region:
    """Entries [i, j) of the block collection `x` (at `path` from the item root, entries at
    column `col`), as the text [begin, stop) with the `edits` inside it."""

    __slots__ = ("x", "path", "i", "j", "col", "begin", "stop", "edits")

    def __init__(self, x, path, i, j, col, begin, stop, edits):
        self.x, self.path, self.i, self.j, self.col = x, path, i, j, col
        self.begin, self.stop, self.edits = begin, stop, edits


def _starts(text: str, x) -> list:
    """Offsets of the first character of each entry of the block collection `x`: the key
    of a mapping entry, the `-` of a sequence entry; [] when a dash is not found right
    before its entry's content."""
    if x.__class__ is _MAPPING:
        return [k.start_mark.index for k, _ in x.value]
    out = []
    for v in x.value:
        j = v.start_mark.index - 1
        while j >= 0 and text[j] == " ":
            j -= 1
        if j < 0 or text[j] != "-":
            return []
        out.append(j)
    return out


class _Walk:
    """One item's walk: its `text`, the _Layout of each collection seen (by id), and
    `lines`: id(edit) -> (column, starts with a `-` entry) of the first line of each edit
    that inserts lines at a line start."""

    __slots__ = ("text", "layouts", "lines")

    def __init__(self, text: str, edits: list):
        self.text, self.layouts, self.lines = text, {}, {}
        for e in edits:
            a, b, new = e[0], e[1], e[2]
            if a == b and (a == 0 or text[a - 1] == "\n") and new.strip(" \n"):
                body = new.lstrip("\n")
                head = body.lstrip(" ")
                self.lines[id(e)] = (len(body) - len(head),
                                     head == "-" or head.startswith(("- ", "-\n")))

    def layout(self, x) -> "_Layout":
        lay = self.layouts.get(id(x))
        if lay is None:
            lay = self.layouts[id(x)] = _Layout(self.text, x)
        return lay


def _split(w: _Walk, x, path: tuple, edits: list, out: list) -> bool:
    """Append to `out` the regions of the edits (sorted by offset, all inside the block
    collection `x` at `path`): per entry of `x` holding edits, the regions inside its
    value when they all fit there (_fits) and it splits, else the entry itself. False
    when some edit has no region. An edit belongs to the last entry starting at or
    before it; the edits are sorted, so one index walks the entries once."""
    cls = x.__class__
    if (cls is not _MAPPING and cls is not _SEQUENCE) or x.flow_style is True:
        return False        # a flow item: its layout is not set by indentation
    lay = w.layout(x)
    starts = lay.starts
    if not starts:
        return False
    values = x.value
    # the checks below are loops, not all()/any()/max() over generators: a generator per
    # group of edits was most of what this walk cost (~6 ms of 58 on the 2,000-item bench)
    n, k, ne, t = len(starts), 0, len(edits), -1
    while k < ne:
        a = edits[k][0]
        while t + 1 < n and starts[t + 1] <= a:
            t += 1
        if t < 0:
            return False
        if t + 1 < n:
            nxt = starts[t + 1]
            m = k + 1
            while m < ne and edits[m][0] < nxt:
                m += 1
        else:
            nxt, m = None, ne
        group, k = edits[k:m], m
        if cls is _MAPPING:
            key, v = values[t]
            key = plain_key(key)
        else:
            key, v = t, values[t]
        # the end of entry t's lines: the next entry's line start, or for the last entry
        # the end of the collection's content (or of an edit past it); a region inside
        # the last entry's value ends there at the latest, one inside another's may not
        # pass the next entry's line start
        stop = lay.begin(t + 1) if nxt is not None else -1
        mark = len(out)
        if key is not None and _fits(w, v, group) and _split(w, v, path + (key,), group,
                                                             out):
            if nxt is None:
                continue
            for r in out[mark:]:
                if not 0 <= r.stop <= stop:
                    break
            else:
                continue
        del out[mark:]
        if nxt is None:
            stop = lay.end()
            for e in group:
                if e[1] > stop:
                    stop = e[1]
        begin = lay.begin(t)
        if begin < 0 or stop < 0:
            return False
        for e in group:
            if e[1] > stop:
                return False
        out.append(_Region(x, path, t, t + 1, starts[t] - begin, begin, stop, group))
    return True


def _fits(w: _Walk, v, group: list) -> bool:
    """True when every edit of `group` (all within v's entry of its parent) belongs inside
    the block collection `v`: it starts at or after v's first entry, and lines it inserts
    at a line start stand right of v's entries' column or at it (a key or a `-` entry in a
    mapping: a new key, or an entry of a sequence under a key at that column; only a `-`
    entry in a sequence: a key line there belongs to the parent). An edit past v's last
    content line lands in v's last entry's region, which then has to pass the same checks
    as any other."""
    cls = v.__class__
    if (cls is not _MAPPING and cls is not _SEQUENCE) or v.flow_style is True or not v.value:
        return False
    lay = w.layout(v)
    if not lay.starts:
        return False
    first = lay.starts[0]
    col = first - (w.text.rfind("\n", 0, first) + 1)
    seq = cls is _SEQUENCE
    lines = w.lines
    for e in group:
        if e[0] < first:
            return False
        if lines:
            ic = lines.get(id(e))
            if ic is not None and (ic[0] < col or (ic[0] == col and seq and not ic[1])):
                return False
    return True


class _Layout:
    """Where the entries of the block collection `x` stand in `text`: `starts` (offset of
    each entry's first character: its key, or its `-`; [] when a dash is not found right
    before an entry's content); `begin(t)` (the start of entry t's line, or -1 when more
    than spaces stand before it there); `end()` (the end of the last content line)."""

    __slots__ = ("text", "x", "starts", "_end")

    def __init__(self, text: str, x):
        self.text, self.x = text, x
        self.starts = _starts(text, x)
        self._end = -1

    def begin(self, t: int) -> int:
        text, p = self.text, self.starts[t]
        b = text.rfind("\n", 0, p) + 1
        return b if p == b or not text[b:p].strip(" ") else -1

    def end(self) -> int:
        if self._end < 0:
            self._end = line_end(self.text, content_end(self.x))
        return self._end


def _regions(text: str, root, edits: list, item_end: int) -> list | None:
    """The edits grouped into disjoint regions (_split), each checked to end cleanly;
    None when some edit has no such region."""
    out: list = []
    if not _split(_Walk(text, edits), root, (), sorted(edits, key=lambda e: (e[0], e[1])),
                  out):
        return None
    for r in out:
        if r.stop > item_end or not _ends_cleanly(text, r, item_end):
            return None
    return out


def _ends_cleanly(text: str, r: _Region, item_end: int) -> bool:
    """The line after region `r` cannot be read as part of it: the next entry of its
    collection (at its column), the item's end, or a non-comment line indented less than
    the region (for a sequence whose dashes stand at its parent key's column, a key line
    at that column)."""
    if r.j < len(r.x.value) or r.stop >= item_end:
        return r.j < len(r.x.value) or r.stop == item_end
    if r.stop > 0 and text[r.stop - 1] != "\n":
        return False
    nl = text.find("\n", r.stop)
    line = text[r.stop:item_end if nl < 0 else min(nl, item_end)]
    rest = line.lstrip(" ")
    col = len(line) - len(rest)
    if not rest or rest.startswith("#"):
        return False
    if col < r.col:
        return True
    return (col == r.col and r.x.__class__ is _SEQUENCE
            and not (rest == "-" or rest.startswith("- ")))


def _entries_of(text: str, r: _Region, memo: dict):
    """The plain entries (a dict for a mapping, a list for a sequence) that the new text
    of region `r` parses to alone, or None when it does not stand alone."""
    body = splice_in(text, r.begin, r.stop, r.edits)
    if text[r.stop - 1:r.stop] == "\n" and not body.endswith("\n"):
        return None         # its last line would run on into the line after it
    key = (body, r.col, r.x.__class__ is _MAPPING, len(r.path))
    if key in memo:
        return memo[key]
    own = _own_text(body, r.col, r.x.__class__ is _SEQUENCE)
    value = None if own is None else _parse_alone(own, r.x.__class__, len(r.path))
    if len(memo) >= _MEMO_SIZE:
        off = memo.get("off")
        memo.clear()
        memo["off"] = off
    memo[key] = value
    return value


def _own_text(body: str, col: int, sequence: bool) -> str | None:
    """`body` shifted left by `col` columns, or None when some line of it is indented less
    (blank lines aside), holds a document marker or directive at that column, or its first
    line does not start an entry of the collection's kind (a `-` entry for a sequence, a
    key for a mapping)."""
    pad = " " * col
    lines = []
    for ln in body.split("\n"):
        if ln.startswith(pad):
            ln = ln[col:]
            if ln.startswith(("---", "...", "%")):
                return None
        elif ln.strip(" "):
            return None
        else:
            ln = ""
        lines.append(ln)
    first = lines[0]
    if not first or first[0] in " #":
        return None
    dash = first == "-" or first.startswith("- ")
    if dash != sequence or (first[0] in "?:" and first[1:2] in ("", " ")):
        return None
    return "\n".join(lines)


def _parse_alone(own: str, kind, depth: int):
    """The plain data of `own` parsed alone as one block collection of `kind`, built as
    load._build_plain builds a node at `depth`; None when it is not exactly that."""
    try:
        nodes = list(yaml.compose_all(own, Loader=Loader))
        if len(nodes) != 1 or nodes[0].__class__ is not kind or nodes[0].flow_style is True:
            return None
        return _build_plain(nodes[0], depth, [0])
    except (yaml.YAMLError, _Refused, RecursionError):
        return None


class _Patched:
    """The original item data with regions' entries put in place; containers on the way
    are copied once, so `original` is never changed."""

    def __init__(self, original):
        self.root = original
        self._copied: set = set()
        self._grown: dict = {}      # id(copied container) -> entries put minus replaced

    def _holder(self, path: tuple):
        """The (copied) container at `path`, or None when the data has none there."""
        if id(self.root) not in self._copied:
            self.root = _copy(self.root)
            if self.root is None:
                return None
            self._copied.add(id(self.root))
        cur = self.root
        for key in path:
            if cur.__class__ is dict:
                if key not in cur:
                    return None
            elif cur.__class__ is not list or key.__class__ is not int or key >= len(cur):
                return None
            nxt = cur[key]
            if id(nxt) not in self._copied:
                nxt = _copy(nxt)
                if nxt is None:
                    return None
                cur[key] = nxt
                self._copied.add(id(nxt))
            cur = nxt
        return cur

    def put(self, r: _Region, entries) -> bool:
        """Put `entries` in place of entries [r.i, r.j) of the collection at r.path (regions
        of one list put from the last: the earlier indices stay valid); False when the
        data does not hold that collection, or a new key repeats a key outside the region
        (the whole item would be refused as a duplicate)."""
        holder = self._holder(r.path)
        if holder is None or (holder.__class__ is dict) != (r.x.__class__ is _MAPPING) \
                or len(holder) != len(r.x.value) + self._grown.get(id(holder), 0):
            return False
        before = len(holder)
        if holder.__class__ is list:
            holder[r.i:r.j] = entries
            self._grown[id(holder)] = self._grown.get(id(holder), 0) + len(holder) - before
            return True
        gone = [plain_key(k) for k, _ in r.x.value[r.i:r.j]]
        if None in gone:
            return False
        for k in gone:
            del holder[k]
        for k in entries:
            if k in holder:
                return False
        holder.update(entries)
        self._grown[id(holder)] = self._grown.get(id(holder), 0) + len(holder) - before
        return True


def _copy(value):
    """A shallow copy of a dict or list; None for anything else."""
    if value.__class__ is dict:
        return dict(value)
    if value.__class__ is list:
        return list(value)
    return None
