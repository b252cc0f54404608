"""kapp's error layout (go-cli-ui's MultiLineError and SemiStructuredError), on messages the real kapp printed."""

from __future__ import annotations

from kapply.apply.error_text import multi_line, semi_structured

SERVICE = (
    "create service/service-fail (v1) namespace: ns: Creating resource service/service-fail (v1) namespace: ns: "
    'API server says: Service "service-fail" is invalid: spec.ports: Required value (reason: Invalid)'
)


def test_each_colon_before_a_capital_starts_a_deeper_line():
    assert multi_line(SERVICE) == (
        "create service/service-fail (v1) namespace: ns:\n"
        "  Creating resource service/service-fail (v1) namespace: ns:\n"
        "    API server says:\n"
        '      Service "service-fail" is invalid: spec.ports:\n'
        "        Required value (reason: Invalid)"
    )


def test_colons_inside_brackets_and_lower_case_parts_stay_on_the_line():
    message = "waiting on reconcile crontab/x (example.com/v1) namespace: ns: Finished unsuccessfully (state: Failed)"
    assert multi_line(message) == (
        "waiting on reconcile crontab/x (example.com/v1) namespace: ns:\n  Finished unsuccessfully (state: Failed)"
    )
    assert multi_line("a {b: C}: D [e: F]") == "a {b: C}:\n  D [e: F]"


def test_only_the_first_line_is_laid_out():
    message = "Validation errors: Bad\n- Invalid name: X"
    assert multi_line(message) == "Validation errors:\n  Bad\n- Invalid name: X"
    assert multi_line("\n\n  - a: B\n\n") == "\n\n  - a: B\n\n"


def test_unbalanced_brackets_leave_the_message_as_it_is():
    for message in ("a (b: C", "a) b: C", "a: B ]: C", "x: Y |... z: W"):
        assert multi_line(message) == message


def test_raw_text_between_markers_is_not_read_for_brackets():
    message = 'Bad: Found in ...|{"ports":"foo|..., more: Context ...|{"a":[|... (reason: BadRequest)'
    assert multi_line(message) == (
        'Bad:\n  Found in ...|{"ports":"foo|..., more:\n    Context ...|{"a":[|... (reason: BadRequest)'
    )


def test_several_validation_errors_become_a_list():
    message = (
        'Service "s" is invalid: [spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive, '
        'spec.type: Unsupported value: "Bogus": supported values: "ClusterIP", "ExternalName"] (reason: Invalid)'
    )
    assert semi_structured(message) == (
        'Service "s" is invalid: \n\n'
        "  - spec.ports[0].port: Invalid value: 0: must be between 1 and 65535\n\n"
        "  - inclusive\n\n"  # kapp splits here too: `inclusive` reads as the start of an item
        '  - spec.type: Unsupported value: "Bogus": supported values: "ClusterIP", "ExternalName"\n\n'
        " (reason: Invalid)"
    )


def test_an_item_keeps_the_groups_inside_it():
    message = 'Job "j" is invalid: [spec.selector: Invalid value: {"a":{"b":"c"}}: not auto-generated, spec.x: Bad]'
    assert semi_structured(message) == (
        'Job "j" is invalid: \n\n  - spec.selector: Invalid value: {"a":{"b":"c"}}: not auto-generated\n\n'
        "  - spec.x: Bad\n\n"
    )


def test_a_list_of_one_item_or_a_nested_list_stays_as_it_is():
    assert (
        semi_structured("is invalid: [spec.x: Bad] (reason: Invalid)") == "is invalid: [spec.x: Bad] (reason: Invalid)"
    )
    nested = "a (b: [spec.x: Bad, spec.y: Bad])"
    assert semi_structured(nested) == nested


def test_positions_are_counted_in_bytes_as_go_does():
    message = "é: Bad ...|x|... ok"
    assert multi_line(message) == "é:\n  Bad ...|x|... ok"
