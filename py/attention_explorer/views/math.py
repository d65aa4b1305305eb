"""Typeset math as MathML (rendered natively by browsers; no CDN, no JS, nothing to pin).

Small builders that compose into MathML strings; every leaf is escaped. Example:

    math(row(mi("A"), mo("="), frac(row(mi("Q"), sup(mi("K"), mo("⊤"))), sqrt(sub(mi("d"), mi("k"))))))

Numbers go through `mn_num`, which formats like views.markup.num (real minus sign).
"""

from __future__ import annotations

from .markup import esc, num


def math(*children: str, display: str = "inline", label: str | None = None) -> str:
    aria = f' aria-label="{esc(label)}"' if label else ""
    return f'<math display="{display}"{aria}>{"".join(children)}</math>'


def row(*children: str) -> str:
    return f"<mrow>{''.join(children)}</mrow>"


def mi(name: str, variant: str | None = None) -> str:
    v = f' mathvariant="{esc(variant)}"' if variant else ""
    return f"<mi{v}>{esc(name)}</mi>"


def mn(value: str) -> str:
    return f"<mn>{esc(value)}</mn>"


def mn_num(x: float, digits: int = 2) -> str:
    s = num(x, digits)
    if s.startswith("−"):
        return f"<mrow><mo>−</mo><mn>{esc(s[1:])}</mn></mrow>"
    return f"<mn>{esc(s)}</mn>"


def mo(op: str) -> str:
    return f"<mo>{esc(op)}</mo>"


def mtext(text: str) -> str:
    return f"<mtext>{esc(text)}</mtext>"


def frac(num_: str, den: str) -> str:
    return f"<mfrac>{num_}{den}</mfrac>"


def sqrt(x: str) -> str:
    return f"<msqrt>{x}</msqrt>"


def sub(base: str, script: str) -> str:
    return f"<msub>{base}{script}</msub>"


def sup(base: str, script: str) -> str:
    return f"<msup>{base}{script}</msup>"


def subsup(base: str, lower: str, upper: str) -> str:
    return f"<msubsup>{base}{lower}{upper}</msubsup>"


def paren(x: str) -> str:
    return row(mo("("), x, mo(")"))


def under(base: str, script: str) -> str:
    return f"<munder>{base}{script}</munder>"


# Frequently used symbols
def sqrt_dk() -> str:
    return sqrt(sub(mi("d"), mi("k")))


def indexed(name: str, *idx: str) -> str:
    """name with a subscript index list, e.g. indexed("A", "i", "j") -> A_ij."""
    return sub(mi(name), row(*(mi(i) for i in idx)))
