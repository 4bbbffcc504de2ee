from scenarios import scenarios
from scenarios.fixes import FIX_STATUS, fix_status


def test_every_reproduced_jira_says_which_release_fixed_it():
    jiras = {sc.jira for sc in scenarios().values()}
    assert jiras <= set(FIX_STATUS), jiras - set(FIX_STATUS)


def test_unknown_jira_is_not_claimed_fixed():
    assert fix_status("KAFKA-1") == "fix status not recorded"
