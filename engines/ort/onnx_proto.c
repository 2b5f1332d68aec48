/*
 * engines/ort/onnx_proto.c — the protobuf writer and the one-node
 * ModelProto encoding declared in onnx_proto.h.
 *
 * Protobuf in brief: a message is a sequence of fields, each a key
 * (field number << 3 | wire type) as a varint, then the value: wire type 0
 * a varint (7 bits a byte, low bits first, high bit = more follows), 5 four
 * little-endian bytes, 2 a varint length and that many bytes (strings and
 * nested messages alike).  Nested messages are encoded into their own
 * buffer first, so their length is known when the parent writes it.
 */
#include "onnx_proto.h"

#include <stdlib.h>
#include <string.h>

enum { WT_VARINT = 0, WT_LEN = 2, WT_FIXED32 = 5 };

/* onnx.proto field numbers, by message. */
enum { MODEL_IR_VERSION = 1, MODEL_PRODUCER = 2, MODEL_GRAPH = 7, MODEL_OPSET = 8 };
enum { OPSET_DOMAIN = 1, OPSET_VERSION = 2 };
enum { GRAPH_NODE = 1, GRAPH_NAME = 2, GRAPH_INPUT = 11, GRAPH_OUTPUT = 12 };
enum { NODE_INPUT = 1, NODE_OUTPUT = 2, NODE_NAME = 3, NODE_OP_TYPE = 4, NODE_ATTR = 5,
       NODE_DOMAIN = 7 };
enum { ATTR_NAME = 1, ATTR_F = 2, ATTR_I = 3, ATTR_TYPE = 20 };
enum { VALUE_NAME = 1, VALUE_TYPE = 2 };
enum { TYPE_TENSOR = 1 };
enum { TENSOR_ELEM_TYPE = 1, TENSOR_SHAPE = 2 };
enum { SHAPE_DIM = 1 };
enum { DIM_VALUE = 1, DIM_PARAM = 2 };

void opb_free(opb *b) {
    free(b->p);
    *b = (opb){0};
}

static void put(opb *b, const void *data, size_t n) {
    if (b->oom || n == 0) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n) cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void varint(opb *b, uint64_t v) {
    uint8_t tmp[10];
    size_t n = 0;
    do {
        tmp[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) tmp[n] |= 0x80;
        n++;
    } while (v);
    put(b, tmp, n);
}

static void key(opb *b, uint32_t f, uint32_t wt) { varint(b, (uint64_t)f << 3 | wt); }

/* Negative int64 values are sent as their two's-complement 64-bit pattern
 * (ten bytes), as protobuf's int64 wants. */
void opb_varint_field(opb *b, uint32_t f, uint64_t v) {
    key(b, f, WT_VARINT);
    varint(b, v);
}

void opb_float_field(opb *b, uint32_t f, float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    const uint8_t le[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
    key(b, f, WT_FIXED32);
    put(b, le, 4);
}

void opb_bytes_field(opb *b, uint32_t f, const void *data, size_t n) {
    key(b, f, WT_LEN);
    varint(b, n);
    put(b, data, n);
}

void opb_str_field(opb *b, uint32_t f, const char *s) { opb_bytes_field(b, f, s, strlen(s)); }

void opb_msg_field(opb *b, uint32_t f, const opb *sub) {
    if (sub->oom) b->oom = 1;
    opb_bytes_field(b, f, sub->p, sub->len);
}

/* ValueInfoProto { name, type: TypeProto { tensor_type { elem_type, shape } } } */
static void value_info(opb *graph, uint32_t f, const onnx_value *v) {
    opb shape = {0}, tensor = {0}, type = {0}, info = {0};
    for (int d = 0; d < v->rank; d++) {
        opb dim = {0};
        if (v->dims[d].param) opb_str_field(&dim, DIM_PARAM, v->dims[d].param);
        else opb_varint_field(&dim, DIM_VALUE, (uint64_t)v->dims[d].value);
        opb_msg_field(&shape, SHAPE_DIM, &dim);
        opb_free(&dim);
    }
    opb_varint_field(&tensor, TENSOR_ELEM_TYPE, (uint64_t)v->elem_type);
    /* A rank-0 (scalar) tensor still gets an empty shape: no shape at all
     * would mean "rank unknown". */
    opb_msg_field(&tensor, TENSOR_SHAPE, &shape);
    opb_msg_field(&type, TYPE_TENSOR, &tensor);
    opb_str_field(&info, VALUE_NAME, v->name);
    opb_msg_field(&info, VALUE_TYPE, &type);
    opb_msg_field(graph, f, &info);
    opb_free(&shape), opb_free(&tensor), opb_free(&type), opb_free(&info);
}

static void attribute(opb *node, const onnx_attr *a) {
    opb at = {0};
    opb_str_field(&at, ATTR_NAME, a->name);
    if (a->type == ONNX_ATTR_FLOAT) opb_float_field(&at, ATTR_F, a->f);
    else opb_varint_field(&at, ATTR_I, (uint64_t)a->i);
    opb_varint_field(&at, ATTR_TYPE, (uint64_t)a->type);
    opb_msg_field(node, NODE_ATTR, &at);
    opb_free(&at);
}

static void opset(opb *model, const char *domain, int64_t version) {
    opb o = {0};
    opb_str_field(&o, OPSET_DOMAIN, domain);
    opb_varint_field(&o, OPSET_VERSION, (uint64_t)version);
    opb_msg_field(model, MODEL_OPSET, &o);
    opb_free(&o);
}

int onnx_encode_model(const onnx_node_model *m, uint8_t **out, size_t *len) {
    opb node = {0}, graph = {0}, model = {0};
    for (int i = 0; i < m->n_in; i++) opb_str_field(&node, NODE_INPUT, m->in[i].name);
    for (int i = 0; i < m->n_out; i++) opb_str_field(&node, NODE_OUTPUT, m->out[i].name);
    opb_str_field(&node, NODE_NAME, "attn");
    opb_str_field(&node, NODE_OP_TYPE, m->op_type);
    for (int i = 0; i < m->n_attr; i++) attribute(&node, &m->attr[i]);
    if (m->domain[0]) opb_str_field(&node, NODE_DOMAIN, m->domain);

    opb_msg_field(&graph, GRAPH_NODE, &node);
    opb_str_field(&graph, GRAPH_NAME, "attnguard_ort");
    for (int i = 0; i < m->n_in; i++)   /* inputs left out have no graph input */
        if (m->in[i].name[0]) value_info(&graph, GRAPH_INPUT, &m->in[i]);
    for (int i = 0; i < m->n_out; i++)
        if (m->out[i].name[0]) value_info(&graph, GRAPH_OUTPUT, &m->out[i]);

    opb_varint_field(&model, MODEL_IR_VERSION, (uint64_t)m->ir_version);
    opb_str_field(&model, MODEL_PRODUCER, "attnguard");
    opb_msg_field(&model, MODEL_GRAPH, &graph);
    opset(&model, "", m->opset_onnx);
    if (m->opset_ms > 0) opset(&model, "com.microsoft", m->opset_ms);
    opb_free(&node), opb_free(&graph);
    if (model.oom) {
        opb_free(&model);
        return -1;
    }
    *out = model.p;
    *len = model.len;
    return 0;
}
