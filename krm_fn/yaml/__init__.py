"""The YAML layer: reading, editing in place and writing YAML text, knowing nothing of what
the documents mean.

- `load`: text -> libyaml node graphs and plain data, within depth/node/alias bounds.
- `safety`: what `spans` may edit, and the read-back check of every edited item.
- `spans`: a planner of text edits that apply (path, value) changes to a node's text,
  keeping comments, key order, quoting and layout; and the splice that applies them.
- `emit`: new YAML text for plain data (block or flow style).
- `ruamel`: the round-trip fallback for what the planner cannot express (imported only
  when needed: ruamel.yaml is slow to import).

This package imports nothing from the rest of krm_fn. Inside it `import yaml` is PyYAML
(imports are absolute); none of its modules runs as a script.
"""
