"""Cabling once racks stand: link classes of every fabric (:mod:`.links`), media and run
lengths (:mod:`.media`), the support fabrics' cables (:mod:`.support`)."""
