"""Admission: the pod the kubelet will run, and the verdict on it (issue #12).

krm-fn edits the manifest as written; this package works out what the cluster makes of it:

    model.py       the data: AdmittedPod (containers after injection, pod-level resources,
                   placement constraints), NodeModel (one node of a pool, with its merged
                   KubeletConfiguration), Finding, PodVerdict
    injectors/     one module per admission-time injector (service meshes, serverless queue
                   proxies, model-storage initializers, secret agents, runtimes,
                   auto-instrumentation): when it fires, what it adds, what sizes it
    qos.py, cpumanager.py, cpu_assignment.py, topology.py, memorymanager.py, capacity.py
                   the kubelet's view: QoS class, exclusive CPUs (and which ones, as the
                   kubelet's cpu_assignment.go takes them), Topology Manager hints and
                   admission, Memory Manager Static, replicas per node
    scheduling.py  nodeSelector / required nodeAffinity against the pool's labels, and
                   webhook constraints (Knative feature flags)
    verdict.py     one PodVerdict per pod from all of the above

Everything here is pure: plain data in, frozen dataclasses out, no YAML and no writes.
The pipeline's verdict step (krm_fn/pipeline/verdict.py) builds the inputs and turns the
verdicts into results.
"""
