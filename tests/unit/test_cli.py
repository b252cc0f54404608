import subprocess
import sys

from kapply import __version__


def run_kapply(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kapply", *args], capture_output=True, text=True, timeout=30)


def test_version_command_prints_the_package_version():
    result = run_kapply("version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"kapply version {__version__}\n"


def test_version_flag_matches_version_command():
    assert run_kapply("--version").stdout == run_kapply("version").stdout


def test_help_lists_commands():
    result = run_kapply("--help")
    assert result.returncode == 0
    assert "kapply helps to manage applications on your Kubernetes cluster" in result.stdout
    assert "version" in result.stdout


def test_unknown_command_fails_as_kapp_does_without_traceback():
    result = run_kapply("no-such-command")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "kapply: Error: Invalid command - see available commands/subcommands above" in result.stderr


def test_usage_errors_exit_1_not_2_which_means_no_changes():
    for args in (("deploy", "--foo"), ("deploy", "-a", "x", "--wait-timeout", "10"), ("app-change",)):
        result = run_kapply(*args)
        assert result.returncode == 1, (args, result.stderr)
        assert result.stderr.startswith("kapply: Error: ")
