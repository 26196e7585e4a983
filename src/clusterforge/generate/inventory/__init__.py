"""NetBox inventory: the bulk-import CSVs (:mod:`.files`) and their rows: devices and racks
(:mod:`.devices`), compute-fabric ports and cables (:mod:`.ports`), rack power (:mod:`.power`),
support-fabric ports and cables (:mod:`.support`)."""
