/*
 * quantity: the one parser of Kubernetes resource quantities ("500m",
 * "64Gi", "1e3", "2", ".5"), as resource.ParseQuantity reads them: an
 * optional sign, digits with an optional fraction, then a binary suffix
 * (Ki .. Ei), a decimal one (n u m "" k M G T P E) or an exponent (e3, E-2).
 * Used by the placement input (requests, allocatable) and the webhook's
 * flags (the barrier's requests). Pure.
 */
#ifndef MUSTER_QUANTITY_H
#define MUSTER_QUANTITY_H

/* The largest value returned, in thousandths (4e15 units: 3.5 PiB of
 * memory, 4e15 cores). */
#define QUANTITY_MAX 4000000000000000000LL

/* A quantity in thousandths of its unit, rounded up: "500m" -> 500,
 * "2" -> 2000, "1Gi" -> 1073741824000, "1e3" -> 1000000, "1n" -> 1.
 * -1 when NULL, malformed, negative, or above QUANTITY_MAX. */
long long quantity_parse(const char *text);

#endif
