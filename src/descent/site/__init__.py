"""Build side of the site: MkDocs hook logic, shortcodes, build-time math, figures.

The hook file ``hooks/descent_hooks.py`` only forwards MkDocs events to :mod:`descent.site.hooks`,
so the logic lives in the package (and a move to another MkDocs-compatible builder is mechanical).
This subpackage may import heavy libraries (matplotlib, sympy); the core of ``descent`` never
imports it.
"""
