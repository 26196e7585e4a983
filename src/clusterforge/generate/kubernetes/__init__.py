"""Kubernetes: operator settings, node labels, the training job (:mod:`.files`), the health-check
agent and its RBAC (:mod:`.agent`), Kueue and Volcano queues (:mod:`.queues`), the RDMA path
(:mod:`.rdma`)."""
