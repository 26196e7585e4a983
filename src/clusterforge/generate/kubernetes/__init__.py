"""Kubernetes: operator settings, node labels, the training job (:mod:`.files`), the health-check
agent and its RBAC (:mod:`.agent`), Kueue and Volcano queues (:mod:`.queues`), the RDMA path
and rail networks (:mod:`.rdma`), NVIDIA's DRA driver (:mod:`.dra`), the pinned versions
(:mod:`.versions`), and the kustomization and install README (:mod:`.install`)."""
