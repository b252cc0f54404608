"""The last-applied record (kapp's `original` and `original-diff-md5`) goes with the create or update itself; a second
write, an update (PUT) as kapp's (so `patch` rights are not needed), corrects it only when the server stored something
other than what was sent. (That the record is kapp's, bit
for bit, is tested against the real kapp in tests/e2e/test_kapp_md5.py.)"""

from __future__ import annotations

from kapply.config.default import default_config
from kapply.diff.change import last_applied
from kapply.objects import ORIGINAL, ORIGINAL_DIFF_MD5, Obj
from tests.unit.fake_cluster import FakeCluster
from tests.unit.test_apply_loop import DISCOVERY, configmap, resources, run

CONFIG = default_config()


def stored(fake: FakeCluster, name: str) -> Obj:
    return next(o for k, o in fake.objects.items() if k[3] == name)


def test_a_create_stored_as_sent_is_one_write_and_its_record_holds():
    fake = FakeCluster(DISCOVERY)
    run(fake, CONFIG, resources(CONFIG, configmap("a") | {"data": {"k": "v"}}))
    assert [entry for entry in fake.log if entry[0] != "get"] == [("create", "ConfigMap", "a")]
    live = stored(fake, "a")
    assert last_applied(live, CONFIG) is not None, live["metadata"]["annotations"]


def test_a_create_the_server_changes_is_corrected_by_a_second_write():
    def default_type(obj: Obj) -> None:
        obj.setdefault("type", "Opaque")

    fake = FakeCluster(DISCOVERY)
    fake.defaults = default_type
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "dg=="}}
    run(fake, CONFIG, resources(CONFIG, secret))
    assert [entry for entry in fake.log if entry[0] != "get"] == [("create", "Secret", "s"), ("update", "Secret", "s")]
    live = stored(fake, "s")
    assert live["type"] == "Opaque"
    assert last_applied(live, CONFIG) is not None, live["metadata"]["annotations"]


def test_disable_original_writes_no_record():
    fake = FakeCluster(DISCOVERY)
    run(fake, CONFIG, resources(CONFIG, configmap("a", **{"kapp.k14s.io/disable-original": ""})))
    annotations = stored(fake, "a")["metadata"]["annotations"]
    assert ORIGINAL not in annotations and ORIGINAL_DIFF_MD5 not in annotations
    assert [entry for entry in fake.log if entry[0] != "get"] == [("create", "ConfigMap", "a")]


def test_a_record_too_large_for_the_write_is_left_out_of_it():
    """Annotations over 256 KiB in total would make the server refuse the create: it goes without them, and the
    record follows in a second write (which a real server refuses, and kapply warns, as kapp)."""
    fake = FakeCluster(DISCOVERY)
    big = configmap("big", **{"example.com/note": "x" * 200_000})
    run(fake, CONFIG, resources(CONFIG, big))
    assert [entry for entry in fake.log if entry[0] != "get"] == [
        ("create", "ConfigMap", "big"),
        ("update", "ConfigMap", "big"),
    ]
