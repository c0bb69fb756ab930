"""A test's scratch copy of a manifest, edited: parts disabled, or the speed bonus's settings
changed. The file the manifest includes (its shared base) is copied beside the copy, where
dtk-grade looks for an include.

usage: scratch_manifest.py MANIFEST OUT [--disable PART...] [--speed-bonus KEY=VALUE...]
"""
import argparse
import json
import os
import shutil

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("manifest")
parser.add_argument("out")
parser.add_argument("--disable", nargs="*", default=[], metavar="PART",
                    help="parts to disable (enabled: false)")
parser.add_argument("--speed-bonus", nargs="*", default=[], metavar="KEY=VALUE",
                    help="settings of every part's speed_bonus")
args = parser.parse_args()

manifest = json.load(open(args.manifest))
for part in manifest["parts"]:
    if str(part["part"]) in args.disable:
        part["enabled"] = False
    for setting in args.speed_bonus:
        key, value = setting.split("=")
        if "speed_bonus" in part:
            part["speed_bonus"][key] = float(value)
with open(args.out, "w") as out:
    json.dump(manifest, out, indent=2)
if "include" in manifest:
    shutil.copy(os.path.join(os.path.dirname(args.manifest), manifest["include"]),
                os.path.dirname(os.path.abspath(args.out)))
