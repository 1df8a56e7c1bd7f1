"""`spec.output.admissionPolicy`, the drift guard: the verdict's checks of what a pod alone
can show, enforced by the API server on every pod of the tuned workloads as it will be
stored, after every mutating webhook (docs/admission-policy.md).

targets.py  the label krm-fn adds to each tuned pod template (written in the tune step)
            and what the policy checks of each labelled pod template (pure data)
policy.py   the ValidatingAdmissionPolicy (CEL) and its ValidatingAdmissionPolicyBinding

Imported only when the option is on (pipeline/tune.py, pipeline/emit.py), so a plain render
does not load it.
"""
