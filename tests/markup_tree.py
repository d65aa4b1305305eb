"""A tiny DOM of view markup for unit tests (stdlib html.parser; attribute values come back unescaped).

Strict: a closing tag with no open element, or an element left open, fails the test,
so it also checks that views write well-formed markup.
"""

from __future__ import annotations

from html.parser import HTMLParser

VOID = {"input", "br", "img", "meta", "link", "hr", "col", "area", "base", "wbr", "source", "track", "param", "embed"}


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children, self.text = tag, dict(attrs), parent, [], ""

    def iter(self):
        yield self
        for c in self.children:
            yield from c.iter()

    def find_all(self, tag=None, **attrs):
        """Nodes with this tag and attributes (class_ -> class, data_x -> data-x; True = present)."""
        want = {k.rstrip("_").replace("_", "-"): v for k, v in attrs.items()}
        return [
            n
            for n in self.iter()
            if (tag is None or n.tag == tag)
            and all((k in n.attrs) if v is True else n.attrs.get(k) == v for k, v in want.items())
        ]

    def has_class(self, cls):
        return cls in (self.attrs.get("class") or "").split()

    def all_text(self):
        return self.text + "".join(c.all_text() for c in self.children)


class _Tree(HTMLParser):
    def __init__(self, markup):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.cur = self.root
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs, self.cur)
        self.cur.children.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        node = self.cur
        while node is not self.root and node.tag != tag:
            node = node.parent
        assert node is not self.root, f"closing </{tag}> without an open one"
        self.cur = node.parent

    def handle_data(self, data):  # text kept in document order as text-only children
        self.cur.children.append(Node("#text", {}, self.cur))
        self.cur.children[-1].text = data


def parse(markup) -> Node:
    tree = _Tree(markup)
    assert tree.cur is tree.root, f"unclosed element <{tree.cur.tag}>"
    return tree.root


def by_class(root, cls, tag=None):
    return [n for n in root.iter() if n.has_class(cls) and (tag is None or n.tag == tag)]


def inside(node, tag=None, cls=None) -> bool:
    """Whether node is, or sits in, an element with this tag or class (e.g. an svg, a .figure)."""
    while node is not None:
        if (tag and node.tag == tag) or (cls and node.has_class(cls)):
            return True
        node = node.parent
    return False
