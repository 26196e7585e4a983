"""The compute fabric drawn as an architect draws it.

:mod:`.diagram` turns a design into a drawing model (:mod:`.layout`: boxes, links, colours);
:mod:`.picture` renders that model with matplotlib (SVG/PNG/PDF) and :mod:`.export` writes it
as draw.io mxGraph XML and Graphviz DOT for network teams to edit.
"""
