"""What the cluster costs: bill of materials and power summary (:mod:`.bom`), build-versus-rent
total cost of ownership (:mod:`.tco`)."""
