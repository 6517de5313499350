"""The Markdown renderer behind every ego_adr page: what report.md and summary.md use, escaped, images inlined."""

from ego_adr.eval.html_page import markdown_to_html, page


def test_report_markdown_renders_tables_and_inline_markup_escaped(tmp_path):
    (tmp_path / "p.png").write_bytes(b"\x89PNG\r\n\x1a\nfake")
    md = (
        "# Title\n\nA **bold** *it* `c<d` \\* star\n\n| Source | Acc |\n|---|---:|\n| demo | 62.5 |\n\n"
        "- one\n- two\n\n```\n<raw>\n```\n\n![plot](p.png) ![gone](missing.png)\n"
    )
    h = markdown_to_html(md, tmp_path)
    assert "<h2>Title</h2>" in h and "<b>bold</b>" in h and "<i>it</i>" in h and "<code>c&lt;d</code>" in h
    assert "* star" in h and "<pre>&lt;raw&gt;</pre>" in h and "<ul><li>one</li><li>two</li></ul>" in h
    assert '<th>Source</th><th class="num">Acc</th>' in h and '<td class="num">62.5</td>' in h
    assert 'src="data:image/png;base64,' in h and 'src="missing.png"' in h


def test_page_keeps_embedded_data_from_closing_its_script():
    text = page("t <x>", "<p>b</p>", script="1", data_json='{"a": "</script><b>"}')
    assert "<title>t &lt;x&gt;</title>" in text and "<\\/script><b>" in text and text.count("</script>") == 2
