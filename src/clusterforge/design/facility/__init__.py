"""The facility: rack density and elevations (:mod:`.layout`, :mod:`.racks`), floor order
(:mod:`.floorplan`), devices into racks (:mod:`.placement`), circuits and power capping
(:mod:`.power`), cooling (:mod:`.cooling`)."""
