"""Whether a party's name is a person's: a 普通发票 issued to a person carries no tax id.

A person is named by a surname of one or two characters and a given name of one or two (张伟,
欧阳娜娜), in parts joined by a middle dot (买买提·艾力), or, where the issuer did not take the
name, as 个人 (个人, 个人（张伟）). An
organisation's registered name is longer and ends in what it is (…有限公司, …医院, …中心), so a
name of two to four ideographs starting with a surname, and not ending so, is a person's.
"""

from __future__ import annotations

import re

from extractor.fields.charsets import ideograph

SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何林罗高郑梁谢宋唐许韩邓冯曹彭曾肖田董潘袁蔡蒋余于杜叶程"
    "魏苏吕丁任卢姚沈钟姜崔谭陆范汪廖石金韦贾夏付傅方邹熊白孟秦邱侯江尹薛闫阎段雷龙黎史陶贺毛郝"
    "顾龚邵万覃武钱戴严莫孔向常汤康易乔赖文施洪辛柴牛温樊庞兰殷葛詹左关鲁童季聂倪俞欧甘申包焦祝"
    "单褚安齐伍邢耿岳梅成刁涂麻尤卓华屈宁舒路骆车祁穆柳鲍秋凌阮景霍游储翟裴蓝郎苗宫谷纪饶桂蔺房"
    "邬滕晏曲伏商艾冉戚靳管解柏卫时巫胥蒙闵佟卜封边仇连苟幸姬隋虞农劳盛云丛师原全符粟和喻项池"
)
"""The commonest single-character surnames: about nine in ten people in China bear one."""

COMPOUND_SURNAMES = frozenset(
    re.findall(
        "..",
        "欧阳司马上官诸葛东方皇甫令狐慕容尉迟司徒公孙轩辕夏侯长孙宇文端木申屠呼延澹台西门南宫独孤",
    )
)

_ENDS = (
    "公司 集团 中心 社区 合作社 事务所 经营部 门市 商行 工作室 "
    "厂 店 院 局 所 部 处 站 馆 社 队 场 委 办"
)
ORGANISATION_ENDS = tuple(re.findall(r"\S+", _ENDS))
"""What an organisation's short name ends in and a person's given name does not."""

_PERSON_LABEL = re.compile(r"个人(?:[（(][\u4e00-\u9fff]{2,4}[）)])?")
_DOTTED = re.compile(r"[\u4e00-\u9fff]{1,8}(?:[·•・][\u4e00-\u9fff]{1,8})+")
"""A name written in its parts with a middle dot: a Uyghur's or a foreigner's (买买提·艾力)."""


def person_name(name: str) -> bool:
    """Whether ``name`` names a person rather than an organisation (see the module's doc)."""
    name = "".join(name.split())
    if _PERSON_LABEL.fullmatch(name):
        return True
    if _DOTTED.fullmatch(name):
        return not name.endswith(ORGANISATION_ENDS)
    if not 2 <= len(name) <= 4 or not all(map(ideograph, name)):
        return False
    surname = 2 if name[:2] in COMPOUND_SURNAMES else 1 if name[0] in SURNAMES else 0
    return bool(surname) and 1 <= len(name) - surname <= 2 and not name.endswith(ORGANISATION_ENDS)


_NAME_ENDS = (
    "公司 集团 中心 企业 合作社 事务所 工作室 门市 超市 "
    "厂 店 院 局 所 部 处 站 馆 社 队 场 委 办 "
    "学 校 园 行 会 府 署 厅 室 台 团 组 "
    "楼 庄 堂 坊 铺 房 屋 吧 城 阁 轩 斋 居 廊 宫 寺 记 号 "
    "海关 监狱 客栈 民宿 苗圃 煤矿 仓库"
)
NAME_ENDS = tuple(re.findall(r"\S+", _NAME_ENDS))
"""What a registered name ends in: a company's legal form (…公司, …企业), an institution's kind
(…学校, …医院, …委员会, …人民政府, …银行), a shop's or a restaurant's word (…超市, …酒楼,
…餐厅, …同仁堂, …张记). Not a place (…市, …区, …县): every name starts with one, and a name
read only that far ends so."""


def ends_as_a_name(name: str) -> bool:
    """Whether ``name`` ends as a party's name does: as an organisation's (:data:`NAME_ENDS`),
    a person's (:func:`person_name`), or in something other than an ideograph (a bracket, a
    Latin word: SAP Labs, （有限合伙）). A name read short of its end (its last characters too
    faint to tell from paper under a phone's flash, worn out of a ribbon, under a stain) ends
    in the middle of a word: 上海益航 for 上海益航商贸有限公司."""
    name = "".join(name.split())
    return not name or not ideograph(name[-1]) or name.endswith(NAME_ENDS) or person_name(name)
