"""Pure renderers: (state, computed trace) -> SVG/HTML markup.

Views draw the trace; they never recompute mathematics. All escaping goes
through views.markup.
"""
