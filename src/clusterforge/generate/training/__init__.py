"""How training is launched: node count and NCCL environment (:mod:`.launch`), Megatron-LM
arguments (:mod:`.megatron`)."""
