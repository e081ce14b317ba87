"""Telling a person's name from an organisation's (a 普通发票 to a person has no tax id)."""

import pytest

from extractor.fields import person_name


@pytest.mark.parametrize(
    "name",
    [
        "张伟",
        "王秀英",
        "欧阳娜娜",
        "司马光",
        "个人",
        "个人（张伟）",
        "个人(李娜)",
        "赵 磊",
        "买买提·艾力",
    ],
)
def test_a_person(name: str) -> None:
    assert person_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "上海市黄浦区人民医院",  # an institution
        "北京达乾装饰工程有限公司",
        "王记商行",  # a shop is named by its owner's surname
        "张氏工作室",
        "李家店",
        "刘",  # one character: a label's, never a name
        "张伟伟伟伟",  # too long for a given name
        "和平饭店",
        "中国银行",  # 中 is no surname
        "John Smith",
        "张3",
        "·艾力",
        "北京·上海科技有限公司",  # dotted, but a company (no part a name's)
    ],
)
def test_not_a_person(name: str) -> None:
    assert not person_name(name)
