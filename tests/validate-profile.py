#!/usr/bin/python3
"""validate-profile.py SCHEMA PROFILE...: check profiles against the JSON Schema.

Prints one line per invalid profile and exits 1 if any is invalid."""
import json
import sys

import jsonschema

schema = json.load(open(sys.argv[1]))
validator = jsonschema.Draft7Validator(schema)
bad = 0
for path in sys.argv[2:]:
    doc = json.load(open(path))
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    for e in errors[:3]:
        print(f"{path}: {'/'.join(map(str, e.path))}: {e.message}")
    bad += bool(errors)
sys.exit(1 if bad else 0)
