/*
 * engines/ort/onnx_proto.h — a one-node ONNX model, encoded in memory.
 *
 * Owns: a small protobuf writer (varints, fixed32, length-delimited
 * fields) and the encoding of a ModelProto that holds one graph of one
 * node: its opset imports, its inputs and outputs as tensor ValueInfos
 * with fixed or symbolic dims, and its int and float attributes.  The
 * field numbers are those of ONNX's public onnx.proto.  Nothing here knows
 * about attention: ort_model.c says what the node is.
 */
#ifndef AG_ONNX_PROTO_H
#define AG_ONNX_PROTO_H

#include <stddef.h>
#include <stdint.h>

/* A growing byte buffer; `oom` sticks once an append failed. */
typedef struct opb {
    uint8_t *p;
    size_t len, cap;
    int oom;
} opb;

void opb_free(opb *b);
/* Protobuf primitives: a field `f` as varint, fixed32 float, bytes, or an
 * already encoded sub-message. */
void opb_varint_field(opb *b, uint32_t f, uint64_t v);
void opb_float_field(opb *b, uint32_t f, float v);
void opb_bytes_field(opb *b, uint32_t f, const void *data, size_t n);
void opb_str_field(opb *b, uint32_t f, const char *s);
void opb_msg_field(opb *b, uint32_t f, const opb *sub);

#define ONNX_MAX_RANK 4

/* One tensor of the graph: `name` ("" in a node's input list marks an
 * optional input left out), element type (ONNX TensorProto.DataType), and
 * per dim either a fixed size (param NULL) or a symbolic name. */
typedef struct onnx_dim {
    int64_t value;
    const char *param;
} onnx_dim;

typedef struct onnx_value {
    const char *name;
    int elem_type;
    int rank;
    onnx_dim dims[ONNX_MAX_RANK];
} onnx_value;

enum { ONNX_ATTR_FLOAT = 1, ONNX_ATTR_INT = 2 };

typedef struct onnx_attr {
    const char *name;
    int type;             /* ONNX_ATTR_FLOAT or ONNX_ATTR_INT */
    float f;
    int64_t i;
} onnx_attr;

typedef struct onnx_node_model {
    int64_t ir_version;
    int64_t opset_onnx;        /* version of the default domain "" */
    int64_t opset_ms;          /* version of "com.microsoft"; 0: not imported */
    const char *op_type, *domain;   /* domain "" for ONNX's own ops */
    const onnx_value *in;
    int n_in;
    const onnx_value *out;
    int n_out;
    const onnx_attr *attr;
    int n_attr;
} onnx_node_model;

/* Encodes m as a serialised ModelProto into *out (malloc'ed, the caller
 * frees) of *len bytes.  Returns 0, or -1 when out of memory. */
int onnx_encode_model(const onnx_node_model *m, uint8_t **out, size_t *len);

#endif /* AG_ONNX_PROTO_H */
