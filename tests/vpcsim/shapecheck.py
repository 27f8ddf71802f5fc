"""An EC2 answer's XML against botocore's service model.

boto3 drops elements its model does not know and parses what it knows
loosely, so a misspelt or misplaced element in the sim's answer would go
unnoticed by the tests that read boto3's result.  problems() walks the
raw XML along the operation's output shape and names every element the
model lacks, every list member not called <item>, every scalar whose text
is not of the model's type, and every enum value outside the model's.
"""
import datetime
import xml.etree.ElementTree as ET

import botocore.session

_MODEL = None


class _Boolean:
    type_name = "boolean"
    enum = None


_BOOLEAN = _Boolean()


def model():
    global _MODEL
    if _MODEL is None:
        _MODEL = botocore.session.get_session().get_service_model("ec2")
    return _MODEL


def _local(tag):
    return tag.rsplit("}", 1)[-1]


def _wire_name(name, shape):
    return shape.serialization.get("name", name)


def _scalar(shape, text, path, out):
    t = shape.type_name
    if t in ("integer", "long"):
        try:
            int(text)
        except ValueError:
            out.append("%s: %r is not an integer" % (path, text))
    elif t in ("float", "double"):
        try:
            float(text)
        except ValueError:
            out.append("%s: %r is not a number" % (path, text))
    elif t == "boolean":
        if text not in ("true", "false"):
            out.append("%s: %r is not true or false" % (path, text))
    elif t == "timestamp":
        try:
            datetime.datetime.strptime(text.replace("Z", "+0000"),
                                       "%Y-%m-%dT%H:%M:%S.%f%z")
        except ValueError:
            try:
                datetime.datetime.strptime(text.replace("Z", "+0000"),
                                           "%Y-%m-%dT%H:%M:%S%z")
            except ValueError:
                out.append("%s: %r is not an ISO 8601 time" % (path, text))
    elif t == "string" and shape.enum and text not in shape.enum:
        out.append("%s: %r is not one of %s" % (path, text, shape.enum))


def _walk(shape, elem, path, out):
    t = shape.type_name
    kids = list(elem)
    if t == "structure":
        members = {_wire_name(n, s): s for n, s in shape.members.items()}
        for k in kids:
            name = _local(k.tag)
            if name not in members:
                out.append("%s/%s: not in the model (%s)" % (path, name, shape.name))
            else:
                _walk(members[name], k, "%s/%s" % (path, name), out)
    elif t == "list":
        item = shape.member.serialization.get("name", "item")
        for i, k in enumerate(kids):
            if _local(k.tag) != item:
                out.append("%s/%s: a list member must be <%s>"
                           % (path, _local(k.tag), item))
            else:
                _walk(shape.member, k, "%s/%s[%d]" % (path, item, i), out)
    elif kids:
        out.append("%s: a %s with child elements" % (path, t))
    else:
        _scalar(shape, elem.text or "", path, out)


def problems(operation, xml_text, ignore=()):
    """Everything in the answer that botocore's model does not describe,
    less the problems whose path ends with one of `ignore` (each an
    element path such as "attachment/instanceId", list indices left out)."""
    found = _problems(operation, xml_text)
    return [p for p in found
            if not any(_bare(p.split(":")[0]).endswith("/" + i) for i in ignore)]


def _bare(path):
    return "/".join(part.split("[")[0] for part in path.split("/"))


def _problems(operation, xml_text):
    op = model().operation_model(operation)
    root = ET.fromstring(xml_text)
    out = []
    if _local(root.tag) != operation + "Response":
        return ["root element is <%s>, not <%sResponse>"
                % (_local(root.tag), operation)]
    shape = op.output_shape
    members = {_wire_name(n, s): s for n, s in shape.members.items()} if shape else {}
    for k in root:
        name = _local(k.tag)
        if name == "requestId":
            continue
        if shape is None and name == "return":
            # EC2 answers <return>true</return> where the model has no output.
            _scalar(_BOOLEAN, k.text or "", "/return", out)
            continue
        if name not in members:
            out.append("/%s: not in the model (%s output)" % (name, operation))
        else:
            _walk(members[name], k, "/" + name, out)
    return out
