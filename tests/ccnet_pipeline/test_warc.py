"""WARC input: the main text of HTML responses, with the HTTP or HTML charset honoured."""

import io
import json

import pytest

from ccnet_pipeline.cli import main
from ccnet_pipeline.samples.wet_writer import raw_record
from ccnet_pipeline.wet import BadRecord, read_segment
from ccnet_pipeline.wet.html import charset_of, html_to_text
from tests.support.helpers import SHARED_DATA

RUSSIAN = "Деревенская библиотека открывается каждое утро в девять часов и закрывается поздно по четвергам."
CHINESE = "村里的图书馆每天早上九点开门，星期四很晚才关门，志愿者给孩子们读故事。"


def response(url: str, http_content_type: str, html: bytes) -> bytes:
    http = f"HTTP/1.1 200 OK\r\nContent-Type: {http_content_type}\r\n\r\n".encode("ascii") + html
    return raw_record(
        {
            "WARC-Type": "response",
            "WARC-Target-URI": url,
            "WARC-Date": "2020-08-10T10:00:00Z",
            "WARC-Record-ID": f"<urn:uuid:{url[-1]}>",
            "Content-Type": "application/http; msgtype=response",
            "Content-Length": str(len(http)),
        },
        http,
    )


def page(title: str, text: str, meta: str = "") -> str:
    return f"<html><head>{meta}<title>{title}</title></head><body><nav>Home | About</nav><main><p>{text}</p><p>{text}</p></main></body></html>"


def warc_file() -> bytes:
    request = raw_record(
        {
            "WARC-Type": "request",
            "WARC-Target-URI": "https://a/1",
            "WARC-Date": "2020-08-10T10:00:00Z",
            "Content-Length": "18",
        },
        b"GET / HTTP/1.1\r\n\r\n",
    )
    return b"".join(
        [
            request,
            response(
                "https://ru.example/1", "text/html; charset=windows-1251", page("Библиотека", RUSSIAN).encode("cp1251")
            ),
            response(
                "https://zh.example/2", "text/html", page("图书馆", CHINESE, '<meta charset="gbk">').encode("gbk")
            ),
            response("https://img.example/3", "image/png", b"\x89PNG\r\n\x1a\n"),
            response("https://empty.example/4", "text/html; charset=utf-8", b""),
        ]
    )


def test_charset_of():
    assert charset_of("text/html; charset=windows-1251") == "cp1251"
    assert charset_of('text/html; Charset="GB2312"') == "gb2312"
    assert charset_of("text/html") is None and charset_of("text/html; charset=nonsense") is None


def test_html_to_text_honours_header_and_meta_charsets():
    title, text = html_to_text(page("Библиотека", RUSSIAN).encode("cp1251"), "text/html; charset=windows-1251")
    assert title == "Библиотека" and RUSSIAN in text
    title, text = html_to_text(
        page("图书馆", CHINESE, '<meta http-equiv="Content-Type" content="text/html; charset=gbk">').encode("gbk")
    )
    assert title == "图书馆" and CHINESE in text


def test_read_segment_warc():
    items = [item for _, item in read_segment(io.BytesIO(warc_file()), "x.warc.gz", fmt="warc")]
    docs = [item for item in items if not isinstance(item, BadRecord)]
    assert [d["url"] for d in docs] == ["https://ru.example/1", "https://zh.example/2"]
    assert docs[0]["title"] == "Библиотека" and RUSSIAN in docs[0]["raw_content"]
    assert CHINESE in docs[1]["raw_content"]
    assert docs[0]["digest"].startswith("sha1:")
    assert [item.kind for item in items if isinstance(item, BadRecord)] == ["empty_record"]


def test_warc_read_as_wet_is_all_non_conversion():
    items = [item for _, item in read_segment(io.BytesIO(warc_file()), "x.warc.gz")]
    assert {item.kind for item in items} == {"non_conversion"}


@pytest.mark.skipif(not (SHARED_DATA / "commoncrawl").is_dir(), reason="../shared/data/commoncrawl absent")
def test_real_commoncrawl_warc_with_legacy_charsets(tmp_path):
    out = tmp_path / "corpus"
    path = SHARED_DATA / "commoncrawl" / "CC-MAIN-2020-34-sample.warc.gz"
    assert (
        main(
            ["mine", "--input", str(path), "--output", str(out), "--format", "warc", "--langs", "100", "--min-len", "0"]
        )
        == 0
    )
    stats = json.loads((out / "stats.json").read_text())
    assert stats["documents_read"] == 16 and stats["bad_records"] == {}
    identified = stats["identified_languages"]
    # 11 Chinese pages (gbk, gb2312, utf-8), 2 German (iso-8859-1 / windows-1252), Russian (windows-1251), Dutch, English.
    assert identified.get("zh", 0) >= 9 and identified.get("ru") == 1 and identified.get("nl") == 1
    with open(path, "rb") as stream:
        docs = [item for _, item in read_segment(stream, path.name, fmt="warc")]
    russian = next(d for d in docs if "Стратегия пожарной безопасности" in d["title"])
    assert "узкоспециализированное" in russian["raw_content"]
