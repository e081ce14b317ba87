"""Telling a person's name from an organisation's (a 普通发票 to a person has no tax id)."""

import pytest

from extractor.fields import ends_as_a_name, person_name


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


@pytest.mark.parametrize(
    "name",
    [
        "北京达乾装饰工程有限公司",
        "中国工商银行股份有限公司上海市分行",
        "福州市鼓楼区第一中学",
        "郑州市金水区实验小学",
        "北京协和医院",
        "国家税务总局上海市税务局",
        "上海市黄浦区人民政府",
        "中国注册会计师协会",
        "深圳市南山区阿华超市",
        "广州酒家集团利口福食品有限公司",
        "北京同仁堂",
        "上海浦东发展银行",
        "中华人民共和国上海海关",
        "张伟",  # a person
        "个人（李娜）",
        "SAP Labs",  # not ending in an ideograph: nothing to tell
        "北京某某投资合伙企业（有限合伙）",
    ],
)
def test_ends_as_a_name(name: str) -> None:
    assert ends_as_a_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "上海益航",  # 上海益航商贸有限公司 read only as far as its faint end
        "北京达乾装饰工程",
        "深圳市南山区",  # a place: every name starts with one
        "青岛航睿宏鑫餐饮管理",
    ],
)
def test_a_name_read_short_of_its_end(name: str) -> None:
    assert not ends_as_a_name(name)
