"""The compute fabric and the support fabrics, as switch counts before any rack is placed:
topology shapes (:mod:`.clos`), the switch graph (:mod:`.connectivity`), sizing
(:mod:`.sizing`), the buyer's view of the compute fabric (:mod:`.network`), storage and
management fabrics (:mod:`.support`)."""
