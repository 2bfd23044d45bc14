"""``python -m numbax cache info`` (location, entries, size), ``cache clear``, and
``precompile`` (numbax's runtime compiled once, at installation: ``numbax.precompile``)."""

from __future__ import annotations

import argparse
import sys

from numbax.codegen.cache_admin import cache_info, clear_cache
from numbax.precompile import precompile


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m numbax")
    commands = parser.add_subparsers(dest="command", required=True)
    cache = commands.add_parser("cache", help="the cache of generated and compiled code")
    cache.add_argument("action", choices=["info", "clear"])
    compile_runtime = commands.add_parser(
        "precompile", help="compile numbax's runtime helpers once, for every later cache"
    )
    compile_runtime.add_argument("--force", action="store_true", help="even when it is current")
    args = parser.parse_args(argv)
    if args.command == "precompile":
        print(precompile(force=args.force))
    elif args.action == "info":
        print(cache_info())
    else:
        cleared = clear_cache()
        removed = len(cleared.directories)
        print(
            f"removed {removed} {'directory' if removed == 1 else 'directories'} "
            f"from {cleared.location}: "
            f"{cleared.entries} generated modules, {cleared.runtime_helpers} compiled runtime "
            f"helpers, {cleared.files} files, {cleared.size_bytes / 1e6:.1f} MB"
        )
        for directory in cleared.directories:
            print(f"  {directory}")
        for reason in cleared.left:
            print(f"left {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
