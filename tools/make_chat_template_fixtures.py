#!/usr/bin/env python3
"""Golden outputs for submoe's Jinja engine and chat templates, rendered by the
reference: transformers' render_jinja_template (the function behind
tokenizer.apply_chat_template) and, for the engine snippets, the same jinja2
environment transformers compiles chat templates in (trim_blocks, lstrip_blocks,
loopcontrols, transformers' tojson, raise_exception, namespace, dict).

    pip install transformers jinja2      # no torch needed
    python3 tools/make_chat_template_fixtures.py

Writes
  tests/fixtures/chat_templates/cases.json  the real templates (one .jinja file per
      model beside it, sources in README.md there) x conversations x
      add_generation_prompt, with the rendered prompt or the template's error (and,
      for the embedded model, apply_chat_template(tokenize=True)'s token ids);
  tests/fixtures/jinja/cases.json           small templates exercising each construct
      and filter of the subset, with their output or the fact that jinja2 fails.

The C++ tests (tests/jinja/*, tests/serve/chat_template_test.cpp) render the same
inputs and compare byte for byte. Nothing here is downloaded: the templates are
the files committed beside cases.json.
"""
import datetime
import json
import pathlib
import sys

import jinja2
import transformers
from transformers.utils import chat_template_utils as ctu

ROOT = pathlib.Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "tests" / "fixtures" / "chat_templates"
JINJA = ROOT / "tests" / "fixtures" / "jinja"

# Special tokens each template is rendered with (the models' tokenizer_config.json
# values where known; they are inputs of the fixture either way).
MODELS = {
    "mixtral-8x7b-instruct": {"bos_token": "<s>", "eos_token": "</s>"},
    "qwen2-moe": {"bos_token": None, "eos_token": "<|im_end|>"},
    "qwen3-moe": {"bos_token": None, "eos_token": "<|im_end|>"},
    "olmoe-instruct": {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"},
    "deepseek-r1": {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"},
    "deepseek-v3.1": {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"},
    "gpt-oss": {"bos_token": "<|startoftext|>", "eos_token": "<|return|>"},
    "kimi-k2-instruct": {"bos_token": "[BOS]", "eos_token": "[EOS]"},
    "default-moe": {"bos_token": None, "eos_token": "<|endoftext|>"},
}

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name, e.g. Paris"}},
            "required": ["city"],
        },
    },
}

CONVERSATIONS = {
    "one_user": [{"role": "user", "content": "Hello"}],
    "system_user": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is 2+2?"},
    ],
    "multi_turn": [
        {"role": "user", "content": "Hi there"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Tell me a joke."},
    ],
    "ends_with_assistant": [
        {"role": "user", "content": "Say yes."},
        {"role": "assistant", "content": "Yes."},
    ],
    "unicode_and_escapes": [
        {"role": "user", "content": "Ünïcödé ✓ \"double\" 'single' \\ backslash\nnew line\ttab 😀 {{ not a tag }} {% raw %}"},
    ],
    "whitespace_content": [
        {"role": "user", "content": "  padded  \n\n"},
        {"role": "assistant", "content": "\n reply \n"},
        {"role": "user", "content": ""},
    ],
    "two_systems": [
        {"role": "system", "content": "First rule."},
        {"role": "system", "content": "Second rule."},
        {"role": "user", "content": "Go."},
    ],
    "thinking_history": [
        {"role": "user", "content": "What is 3*7?"},
        {"role": "assistant", "content": "<think>\n3*7 is 21.\n</think>\n\n21"},
        {"role": "user", "content": "And 3*8?"},
    ],
    "not_alternating": [
        {"role": "user", "content": "One"},
        {"role": "user", "content": "Two"},
    ],
    "tool_round_trip": [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}
            ],
        },
        {"role": "tool", "content": "22 C, sunny"},
        {"role": "assistant", "content": "It is 22 C and sunny in Paris."},
        {"role": "user", "content": "Thanks"},
    ],
}

# (conversation, add_generation_prompt, extra keyword variables, tools?)
RUNS = []
for name in CONVERSATIONS:
    for agp in (True, False):
        RUNS.append((name, agp, {}, False))
RUNS += [
    ("one_user", True, {"enable_thinking": False}, False),
    ("one_user", True, {"thinking": True}, False),
    ("system_user", True, {}, True),
    ("tool_round_trip", True, {}, True),
]


def render_chat(template, messages, agp, tokens, extra, tools):
    kwargs = {k: v for k, v in tokens.items() if v is not None}
    kwargs.update(extra)
    try:
        out = ctu.render_jinja_template(
            conversations=[messages],
            tools=[WEATHER_TOOL] if tools else None,
            chat_template=template,
            add_generation_prompt=agp,
            **kwargs,
        )
        # render_jinja_template returns (rendered, generation_indices)
        rendered = out[0] if isinstance(out, tuple) else out
        return {"expected": rendered[0] if isinstance(rendered, list) else rendered}
    except jinja2.exceptions.TemplateError as e:
        raised = type(e) is jinja2.exceptions.TemplateError  # raise_exception() raises the base class
        return {"error": str(e), "raised_by_template": raised}
    except Exception as e:  # noqa: BLE001 - a Python error inside the template (None + str, ...)
        return {"error": f"{type(e).__name__}: {e}", "raised_by_template": False}


def load_template(model):
    # The embedded model's template is the one in its tokenizer_config.json.
    if model == "default-moe":
        config = json.loads((ROOT / "models" / "default-moe" / "tokenizer_config.json").read_text(encoding="utf-8"))
        return config["chat_template"]
    return (TEMPLATES / f"{model}.jinja").read_text(encoding="utf-8")


def chat_cases():
    # The embedded model's cases also record apply_chat_template(tokenize=True)'s
    # ids: the rendered prompt tokenized with its special tokens and nothing added.
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(ROOT / "models" / "default-moe"))
    cases = []
    for model, tokens in MODELS.items():
        template = load_template(model)
        for conv, agp, extra, tools in RUNS:
            case = {
                "template": model,
                "conversation": conv,
                "messages": CONVERSATIONS[conv],
                "add_generation_prompt": agp,
                "variables": {**{k: v for k, v in tokens.items() if v is not None}, **extra},
                "tools": [WEATHER_TOOL] if tools else None,
            }
            case.update(render_chat(template, CONVERSATIONS[conv], agp, tokens, extra, tools))
            if model == "default-moe" and "expected" in case:
                enc = tokenizer.apply_chat_template(CONVERSATIONS[conv], tools=[WEATHER_TOOL] if tools else None,
                                                    add_generation_prompt=agp, tokenize=True, **extra)
                case["expected_ids"] = list(enc["input_ids"] if hasattr(enc, "keys") else enc)
            cases.append(case)
    return cases


# Engine snippets: (template, variables). Each renders in transformers' environment;
# a failure is recorded as an expected error.
SNIPPETS = [
    # text, whitespace control, trim_blocks / lstrip_blocks, comments, raw
    ("plain text\n", {}),
    ("a\n  {% if true %}\n    b\n  {% endif %}\nc", {}),
    ("a  {%- if true -%}  b  {%- endif -%}  c", {}),
    ("x {{- ' y ' -}} z", {}),
    ("  {# comment #}\nafter", {}),
    ("a{#- c -#}  b", {}),
    ("{% raw %}{{ not rendered }}{% endraw %}", {}),
    ("line1\r\nline2\rline3\n", {}),
    ("  {%+ if true %}kept{% endif %}", {}),
    ("{% if true +%}\nnewline kept{% endif %}", {}),
    ("{{ 'a' }}  {% if true %}x{% endif %}", {}),
    ("\n{% for i in [1, 2] %}\n  item {{ i }}\n{% endfor %}\n", {}),
    # literals and printing
    ("{{ 1 }} {{ 1.0 }} {{ 1.5e3 }} {{ 1e-7 }} {{ 1e16 }} {{ 0.1 + 0.2 }} {{ -0.0 }}", {}),
    ("{{ true }} {{ false }} {{ none }} {{ True }} {{ None }}", {}),
    ("{{ [1, 'a', none, true, 2.5] }} {{ {'k': 'v', 'n': 1} }}", {}),
    ("{{ \"it's\" }} {{ ['it\\'s'] }} {{ ['say \"hi\"'] }}", {}),
    ("{{ 'tab\\tnew\\nline \\u00e9 \\x41 \\101 \\q' }}", {}),
    ("{{ 'adjacent' 'strings' }}", {}),
    ("[{{ undefined_name }}]", {}),
    # arithmetic and operators
    ("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }}", {}),
    ("{{ 1 + 2 * 3 - 4 }} {{ (1 + 2) * 3 }} {{ -2 ** 2 }} {{ true + 1 }}", {}),
    ("{{ 'ab' * 3 }} {{ [1] * 3 }} {{ 'a' ~ 1 ~ none ~ undefined_name }}", {}),
    ("{{ 'a' + 1 }}", {}),
    ("{{ 1 / 0 }}", {}),
    ("{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }}", {}),
    ("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'x' not in 'abc' }}", {}),
    ("{{ 0 or 'fallback' }} {{ 'first' and 'second' }} {{ not 0 }} {{ none or [] or 'z' }}", {}),
    ("{{ 'yes' if 1 else 'no' }} {{ 'yes' if 0 else 'no' }} [{{ 'only' if false }}]", {}),
    ("{{ 1 < 'a' }}", {}),
    # attributes, items, slices
    ("{{ m.role }} {{ m['content'] }} [{{ m.missing }}] {{ m.missing is defined }}", {"m": {"role": "user", "content": "hi"}}),
    ("{{ xs[0] }} {{ xs[-1] }} [{{ xs[10] }}] {{ xs[1:] }} {{ xs[::-1] }} {{ xs[:-1] }} {{ xs[::2] }}", {"xs": [1, 2, 3, 4]}),
    ("{{ 'héllo'[1] }} {{ 'héllo'[::-1] }} {{ 'héllo'[1:3] }} {{ 'héllo' | length }}", {}),
    ("{{ missing.attr }}", {}),
    ("{{ xs.0 }}", {"xs": ["zero"]}),
    # string methods
    ("{{ ' a b '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '\\n\\nz\\n'.lstrip('\\n') }}|{{ 'z  '.rstrip() }}", {}),
    ("{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a,b,c'.rsplit(',', 1) }}", {}),
    ("{{ 'x</think>y</think>z'.split('</think>')[-1] }} {{ 'abc'.startswith('a') }} {{ 'abc'.endswith(('x', 'c')) }}", {}),
    ("{{ 'Hello'.upper() }} {{ 'Hello'.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }}", {}),
    ("{{ 'aaa'.replace('a', 'b', 2) }} {{ 'abc'.find('c') }} {{ 'abc'.find('z') }} {{ 'a-b'.count('-') }}", {}),
    ("{{ ', '.join(['a', 'b']) }} {{ 'a\\nb\\r\\nc'.splitlines() }} {{ '12'.isdigit() }} {{ 'pre-x'.removeprefix('pre-') }}", {}),
    # dict methods
    ("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %} {{ d.keys() | list }} {{ d.get('a') }} {{ d.get('z', 0) }} {{ d.get('z') }}", {"d": {"b": 1, "a": 2}}),
    # filters
    ("{{ [3, 1, 2] | length }} {{ 'abc' | count }} {{ {'a': 1} | length }} {{ undefined_name | length }}", {}),
    ("{{ x | tojson }}", {"x": {"b": [1, 2.5, None, True], "a": "é\"\\\n", "nested": {"k": []}}}),
    ("{{ x | tojson(indent=2) }}", {"x": {"b": [1, {"c": None}], "a": {}}}),
    ("{{ x | tojson(sort_keys=true) }} {{ x | tojson(separators=(',', ':')) }}", {"x": {"b": 1, "a": [1, 2]}}),
    ("{{ 'é' | tojson(ensure_ascii=true) }} {{ '😀' | tojson(ensure_ascii=true) }} {{ 1e20 | tojson }} {{ 3.0 | tojson }}", {}),
    ("{{ '  x  ' | trim }}|{{ 'xxyxx' | trim('x') }}|{{ 'ab' | upper }}|{{ 'AB' | lower }}|{{ 'a b' | title }}", {}),
    ("{{ undefined_name | default('d') }} {{ '' | default('d') }} {{ '' | default('d', true) }} {{ none | d('n') }}", {}),
    ("{{ [1, 2, 3] | first }} {{ [1, 2, 3] | last }} {{ 'abc' | first }} {{ [1, 2] | join('-') }} {{ [1, 2] | join }}", {}),
    ("{{ [{'n': 'a'}, {'n': 'b'}] | map(attribute='n') | join(',') }} {{ ['a', 'b'] | map('upper') | list }}", {}),
    ("{{ xs | selectattr('type', 'equalto', 'function') | list | length }} {{ xs | rejectattr('type', 'equalto', 'function') | list }}", {"xs": [{"type": "function"}, {"type": "other"}, {"type": "function"}]}),
    ("{{ [1, 2, 3, 4] | select('odd') | list }} {{ [0, 1, '', 'a'] | select | list }} {{ [1, 2, 3] | reject('even') | list }}", {}),
    ("{{ ['b', 'A', 'c'] | sort }} {{ [3, 1, 2] | sort(reverse=true) }} {{ [{'k': 2}, {'k': 1}] | sort(attribute='k') }}", {}),
    ("{{ [1, 2, 2, 'a', 'A'] | unique | list }} {{ [1, 2] | reverse | list }} {{ 'abc' | reverse }} {{ [3, 1] | max }} {{ [3, 1] | min }}", {}),
    ("{{ {'b': 1, 'a': 2} | dictsort }} {{ {'b': 1, 'a': 2} | items | list }} {{ [1, 2.5] | sum }}", {}),
    ("{{ '3' | int + 1 }} {{ 'x' | int }} {{ '2.5' | float }} {{ 3.9 | int }} {{ 2.5 | round }} {{ 3.14159 | round(2) }} {{ -3 | abs }}", {}),
    ("{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}", {}),
    ("{{ '<a href=\"x\">&' | e }} {{ 'x' | safe }} {{ 1 | string }} {{ 'one two  three' | wordcount }} {{ 'abca' | replace('a', 'X') }}", {}),
    ("{{ [1, 2] | tojson }} {{ none | tojson }} {{ 'x' | list }}", {}),
    # tests
    ("{{ 1 is number }} {{ 'a' is string }} {{ none is none }} {{ x is mapping }} {{ [1] is iterable }} {{ 1 is integer }} {{ 1.0 is float }}", {"x": {}}),
    ("{{ 4 is even }} {{ 3 is odd }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ false is sameas false }} {{ true is true }} {{ 0 is false }}", {}),
    ("{{ x is defined }} {{ x is not defined }} {{ x is undefined }} {{ 'a' is in 'abc' }} {{ 2 is eq 2 }} {{ 1 is lt 2 }}", {}),
    ("{{ f is callable }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 1 is boolean }} {{ true is boolean }}", {"f": None}),
    # statements
    ("{% for x in [1, 2, 3] %}{{ loop.index }}/{{ loop.length }}:{{ loop.first }}{{ loop.last }}{{ loop.revindex0 }} {% endfor %}", {}),
    ("{% for x in [] %}a{% else %}empty{% endfor %} {% for x in [1, 2, 3, 4] if x is even %}{{ x }}{{ loop.index }}{% endfor %}", {}),
    ("{% for x in [1, 2, 3, 4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }},{% endfor %} {% for c in 'hé' %}[{{ c }}]{% endfor %} {% for k in {'x': 1, 'y': 2} %}{{ k }}{% endfor %}", {}),
    ("{% for x in [1, 2] %}{{ loop.previtem }}>{{ x }}>{{ loop.nextitem }} {{ loop.cycle('odd', 'even') }};{% endfor %}", {}),
    ("{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{{ x }}{% endfor %} {{ x }}", {}),
    ("{% set ns = namespace(total=0, items=[]) %}{% for i in [1, 2, 3] %}{% set ns.total = ns.total + i %}{% endfor %}{{ ns.total }}", {}),
    ("{% set a, b = 1, 2 %}{{ a }}{{ b }} {% set t = (1, 2) %}{{ t[1] }}", {}),
    ("{% set block %}inner {{ 1 + 1 }}{% endset %}[{{ block }}]", {}),
    ("{% if 0 %}a{% elif '' %}b{% elif [1] %}c{% else %}d{% endif %}", {}),
    ("{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', greeting='Hi') }} {{ greet('C', 'Yo') }}", {}),
    ("{% macro rec(n) %}{% if n > 0 %}{{ n }}{{ rec(n - 1) }}{% endif %}{% endmacro %}{{ rec(3) }}", {}),
    ("{% generation %}tracked{% endgeneration %}", {}),
    ("{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(3, 0, -1) | list }} {{ dict(a=1, b='x') }}", {}),
    ("{{ raise_exception('custom failure') }}", {}),
    ("{% set x = namespace(a=1) %}{{ x.a }}{% set y = {'a': 1} %}{% set y.a = 2 %}", {}),
    ("{{ messages[0]['content'] if messages else 'none' }} {{ messages | length }}", {"messages": []}),
    ("{{ [1, 2][5] is defined }} {{ {'a': {'b': 3}}.a.b }} {{ 'x'.missing_method() }}", {}),
    # syntax errors
    ("{% if true %}unclosed", {}),
    ("{{ 1 + }}", {}),
    ("{% endfor %}", {}),
    ("{{ x | no_such_filter }}", {}),
    ("{{ 'unterminated }}", {}),
    ("{% for %}", {}),
]


def engine_cases():
    cases = []
    for template, variables in SNIPPETS:
        case = {"template": template, "variables": variables}
        try:
            case["expected"] = ctu._compile_jinja_template(template).render(**variables)
        except Exception as e:  # noqa: BLE001 - jinja2 refusing the template is the expectation
            case["error"] = f"{type(e).__name__}: {e}"
        cases.append(case)
    return cases


def write(path, payload):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    print(f"wrote {path.relative_to(ROOT)}: {len(payload['cases'])} cases", file=sys.stderr)


def main():
    generator = f"transformers {transformers.__version__}, jinja2 {jinja2.__version__}"
    # gpt-oss prints strftime_now("%Y-%m-%d"); the test puts its own day in place of this one.
    today = datetime.datetime.now().strftime("%Y-%m-%d")
    write(TEMPLATES / "cases.json", {"generator": generator, "strftime_date": today, "cases": chat_cases()})
    write(JINJA / "cases.json", {"generator": generator, "cases": engine_cases()})


if __name__ == "__main__":
    main()
