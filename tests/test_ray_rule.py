"""krm_fn/rules/ray.py: rayStartParams.num-cpus and what its message says of the Ray
container's CPUs."""
from __future__ import annotations

import yaml

from tests.helpers import run_fn

RAY = """apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: ray.io/v1
  kind: RayCluster
  metadata: {name: rc, namespace: ml}
  spec:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
          - {name: ray-head, image: rayproject/ray:2.40.0, resources: {requests: {cpu: "2", memory: 4Gi}, limits: {cpu: "2", memory: 4Gi}}}
    workerGroupSpecs:
    - groupName: w
      replicas: 1
      rayStartParams: {}
      template:
        metadata:
          annotations: {krm-fn.dev/pinned-containers: "sidecar"}
        spec:
          containers:
          - {name: ray-worker, image: rayproject/ray:2.40.0, resources: {requests: {cpu: 3500m, memory: 8Gi}, limits: {cpu: 3500m, memory: 8Gi}}}
          - {name: sidecar, image: side:1, resources: {requests: {cpu: "1", memory: 1Gi}, limits: {cpu: "1", memory: 1Gi}}}
"""


def test_a_shared_pool_ray_container_is_not_called_pinned():
    """Hostile review: with another container pinned, the Ray container at 3500m runs in
    the shared pool; the message said it had '3 pinned CPUs'."""
    p = run_fn([], RAY)
    msgs = [r["message"] for r in yaml.safe_load(p.stdout)["results"]
            if r["message"].startswith("rayStartParams.num-cpus")]
    assert msgs == [
        "rayStartParams.num-cpus set to 2: the Ray container 'ray-head' has 2 pinned CPUs; "
        "Ray schedules tasks and sizes each worker's OMP_NUM_THREADS by num-cpus",
        "rayStartParams.num-cpus set to 3: the Ray container 'ray-worker' has a cpu limit of "
        "3500m, not a whole number, so it runs in the shared pool, 3 CPUs of it counted; Ray "
        "schedules tasks and sizes each worker's OMP_NUM_THREADS by num-cpus"]
