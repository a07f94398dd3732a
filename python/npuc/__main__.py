"""python3 -m npuc COMMAND ...: the npuc commands written in Python (`npuc tune` runs `python3 -m npuc tune`)."""
import sys


def main(argv):
    if len(argv) >= 1 and argv[0] == "tune":
        from .tuning import main as tune_main
        return tune_main(argv[1:])
    print("usage: python3 -m npuc tune ... (docs/tune.md)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
