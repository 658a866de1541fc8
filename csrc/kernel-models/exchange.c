/* The pivot search's exchange (HPL_pdmxswp) as a modelled exchange.
 *
 * For each of a panel's columns, HPL_pdmxswp combines the ranks' candidates for the pivot
 * across the process column: log2(P) rounds of 1-2 kB messages (plus a fold-in, a fold-out
 * and a broadcast of the current row when P is not a power of two). At 32 x 32 that is two
 * thirds of a panel's messages, each a simulated network flow that SimGrid's max-min system
 * switches on and off (docs/validation.md E67). The exchange is latency-bound: nothing else
 * gains from simulating it message by message. So by default (HPLSIM_EXCHANGES=modelled):
 * - every rank of the column publishes its candidate (WORK[0..3]), its host and the time it
 *   entered, in memory that the simulation's ranks share (they live in one process);
 * - the last one to arrive replays HPL's own exchange pattern for the whole column in
 *   memory: each message priced by the platform's laws as SMPI prices it alone on the
 *   network (netlaws.c), each rank starting at its own entry time, so that a late rank
 *   delays exactly the ranks its messages reach, when they reach them;
 * - all wait on a SimGrid barrier among the column's ranks (one simcall, no network
 *   action), take the winner (the candidate HPL's combine keeps: the largest magnitude,
 *   ties to the lowest process row, a total order, so every rank gets the same) and sleep
 *   until the time the replay gives them.
 * HPL's control flow goes on exactly as with messages. Left out: contention between these
 * messages and other traffic, and the rows they carry (Wmx, A0: the folded matrix's
 * values, which nothing reads back; the swaps write them into a sink).
 *
 * HPLSIM_EXCHANGES=messages keeps HPL's messages (the reference). HPLSIM_EXCHANGES=checked
 * keeps them too and, after each exchange, computes what the model would have given for
 * the same entries: every rank compares its winner and its finishing time with the
 * replay's, and the run's report says how far they landed (hplsim_exchange_report). */
#include <math.h>
#include <mpi.h>
#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exchange.h"
#include "fatal.h"
#include "matrix.h"
#include "netlaws.h"
#include "runtime.h"

enum { MODELLED, MESSAGES, CHECKED };

void (*hplsim_on_exchange)(double t0, int64_t bytes);

static int exchange_mode(void)
{
  static int mode = -1;
  if (mode < 0) {
    const char *how = getenv("HPLSIM_EXCHANGES");
    if (!how || !*how || strcmp(how, "modelled") == 0)
      mode = MODELLED;
    else if (strcmp(how, "messages") == 0)
      mode = MESSAGES;
    else if (strcmp(how, "checked") == 0)
      mode = CHECKED;
    else
      hplsim_fatal("HPLSIM_EXCHANGES=%s: expected modelled, messages or checked", how);
  }
  return mode;
}

/* ------------------------------------------------------------ the shared column area */

typedef struct {
  double record[4]; /* the candidate: |max|, local row, global row, owner's process row */
  double entry;     /* simulated time the rank entered the exchange */
  double done;      /* modelled: when the replay says its exchange ends */
  sg_host_t host;
} slot;

typedef struct {
  int nprow;
  int arrived;
  sg_bar_t barrier;
  double winner[2][4];
} column_head;

typedef struct {
  int nprow, npcol;
} area_head;

static int area_fd = -1;
static char *area;
static int area_nprow, area_npcol;
static size_t area_stride;

#define ALIGN(x) (((x) + 63) & ~(size_t)63)

static size_t column_stride(int nprow)
{
  return ALIGN(sizeof(column_head)) + ALIGN(2 * (size_t)nprow * sizeof(slot)) +
         2 * (size_t)nprow * (size_t)nprow * sizeof(double);
}

static size_t scratch_bytes(int nprow);
static void set_scratch(char *at);

static column_head *column(int mycol)
{
  return (column_head *)(area + ALIGN(sizeof(area_head)) + ALIGN(scratch_bytes(area_nprow)) +
                         (size_t)mycol * area_stride);
}

static slot *slots(column_head *c, int parity)
{
  return (slot *)((char *)c + ALIGN(sizeof(column_head))) + (size_t)parity * (size_t)c->nprow;
}

/* The routes between the column's process rows: latency and bandwidth, 0 bandwidth while
 * unknown; computed once for the whole simulation. */
static double *routes(column_head *c)
{
  return (double *)((char *)c + ALIGN(sizeof(column_head)) + ALIGN(2 * (size_t)c->nprow * sizeof(slot)));
}

static void map_area(int nprow, int npcol)
{
  if (area && area_nprow == nprow && area_npcol == npcol)
    return;
  size_t stride = column_stride(nprow);
  size_t size = ALIGN(sizeof(area_head)) + ALIGN(scratch_bytes(nprow)) + (size_t)npcol * stride;
  area = hplsim_map_shared("hplsim-exchange", "HPLSIM_EXCHANGE_FD", &area_fd, size);
  area_nprow = nprow;
  area_npcol = npcol;
  area_stride = stride;
  set_scratch(area + ALIGN(sizeof(area_head)));
  area_head *head = (area_head *)area;
  if (head->nprow != nprow || head->npcol != npcol) {
    /* a new grid (an HPL.dat may list several): ranks run one at a time, so the first one
     * to arrive sets the area up for all */
    memset(area, 0, size);
    head->nprow = nprow;
    head->npcol = npcol;
  }
}

/* ------------------------------------------------------------ replaying HPL's pattern */

/* One rank's operations in HPL_pdmxswp, in order: HPL_sdrv is an MPI_Irecv, a blocking
 * MPI_Send and an MPI_Wait; HPL_send and HPL_recv are MPI_Send and MPI_Recv. */
typedef struct {
  char kind;  /* 'I' irecv, 'S' send, 'W' wait for the last irecv, 'R' recv */
  int peer;   /* distance from the current row's owner (HPL's mydist) */
  int bytes;
} op;

#define MAX_OPS 96

static int build_ops(int d, int nprow, int n0, op *ops)
{
  const int cnt_ = 8 * (n0 + 4), cnt0 = 8 * (2 * n0 + 4), row = 8 * n0;
  int ip2 = 1, hdim = 0;
  while (2 * ip2 <= nprow) {
    ip2 *= 2;
    hdim++;
  }
  const int size_ = nprow - ip2, np2 = size_ != 0;
  int n = 0, partner;
#define OP(k, p, b) (ops[n].kind = (k), ops[n].peer = (p), ops[n].bytes = (b), n++)
  if (np2 && (partner = d ^ ip2) < nprow) {
    if (d & ip2) {
      if (d == ip2) {
        OP('I', partner, row);
        OP('S', partner, cnt_);
        OP('W', partner, row);
      } else
        OP('S', partner, cnt_);
    } else {
      if (d == 0) {
        OP('I', partner, cnt_);
        OP('S', partner, row);
        OP('W', partner, cnt_);
      } else
        OP('R', partner, cnt_);
    }
  }
  if (d < ip2) {
    for (int k = 0; k < hdim; k++) {
      int scnt, rcnt;
      if ((d >> (k + 1)) == 0) {
        if ((d >> k) == 0) {
          scnt = cnt0;
          rcnt = cnt_;
        } else {
          scnt = cnt_;
          rcnt = cnt0;
        }
      } else
        scnt = rcnt = cnt_;
      partner = d ^ (1 << k);
      OP('I', partner, rcnt);
      OP('S', partner, scnt);
      OP('W', partner, rcnt);
    }
  } else if (size_ > 1) {
    int k = size_ - 1, ip2_ = 1, mask = 1;
    while (k > 1) {
      k >>= 1;
      ip2_ <<= 1;
      mask = (mask << 1) + 1;
    }
    int mydis_ = d - ip2;
    do {
      mask ^= ip2_;
      if ((mydis_ & mask) == 0) {
        partner = mydis_ ^ ip2_;
        if (mydis_ & ip2_)
          OP('R', ip2 + partner, row);
        else if (partner < size_)
          OP('S', ip2 + partner, row);
      }
      ip2_ >>= 1;
    } while (ip2_ > 0);
  }
  if (np2 && (partner = d ^ ip2) < nprow) {
    if (d & ip2)
      OP('R', partner, cnt_);
    else
      OP('S', partner, cnt_);
  }
#undef OP
  if (n > MAX_OPS)
    hplsim_fatal("the modelled exchange's pattern is longer than %d operations", MAX_OPS);
  return n;
}

typedef struct {
  int src, bytes, matched;
  double post, arrival, recv_overhead;
} post;

typedef struct {
  int n, pc, stage;
  int req;  /* the receive the next 'W' waits for */
  int sent; /* a rendezvous send's message, in the receiver's inbox */
  double clock;
  op ops[MAX_OPS];
  post in[MAX_OPS];   /* messages sent to this rank, in order */
  post reqs[MAX_OPS]; /* receives it posted, in order */
  int nin, nreqs;
} replay_rank;

/* The replay's scratch: one for the whole simulation, in the shared area (the ranks run one
 * at a time and a replay makes no simcall, so they never use it at once). A private one per
 * rank cost 9 kB x P on every rank that replayed: 300 MB at 1,024 ranks. */
static replay_rank *rr;
static unsigned long replayed_sends; /* messages this rank's replays stood for */

static size_t scratch_bytes(int nprow)
{
  return (size_t)nprow * sizeof(replay_rank);
}

static void set_scratch(char *at)
{
  rr = (replay_rank *)at;
}

typedef struct {
  column_head *col;
  slot *s;
  int icurrow, nprow;
} replay_ctx;

static int row_of(const replay_ctx *x, int d)
{
  return (d + x->icurrow) % x->nprow;
}

static void price(const replay_ctx *x, int from, int to, int bytes, hplsim_message_cost *cost)
{
  int a = row_of(x, from), b = row_of(x, to);
  double *r = routes(x->col) + 2 * ((size_t)a * (size_t)x->nprow + (size_t)b);
  if (r[1] == 0.0)
    hplsim_route(x->s[a].host, x->s[b].host, &r[0], &r[1]);
  hplsim_message_price(x->s[a].host, x->s[b].host, bytes, r[0], r[1], cost);
}

static void match(const replay_ctx *x, int dst, post *m, post *q)
{
  hplsim_message_cost cost;
  price(x, m->src, dst, m->bytes, &cost);
  double start = cost.eager ? m->post : fmax(m->post, q->post);
  m->arrival = q->arrival = start + cost.transfer;
  q->recv_overhead = cost.recv_overhead;
  m->matched = q->matched = 1;
  if (m->bytes != q->bytes)
    hplsim_fatal("modelled exchange: a %d-byte message meets a %d-byte receive", m->bytes, q->bytes);
}

static int post_message(const replay_ctx *x, int src, int dst, int bytes, double when)
{
  replay_rank *r = &rr[dst];
  post *m = &r->in[r->nin];
  *m = (post){.src = src, .bytes = bytes, .post = when};
  for (int i = 0; i < r->nreqs; i++)
    if (!r->reqs[i].matched && r->reqs[i].src == src) {
      match(x, dst, m, &r->reqs[i]);
      break;
    }
  return r->nin++;
}

static int post_receive(const replay_ctx *x, int dst, int src, int bytes, double when)
{
  replay_rank *r = &rr[dst];
  post *q = &r->reqs[r->nreqs];
  *q = (post){.src = src, .bytes = bytes, .post = when};
  for (int i = 0; i < r->nin; i++)
    if (!r->in[i].matched && r->in[i].src == src) {
      match(x, dst, &r->in[i], q);
      break;
    }
  return r->nreqs++;
}

/* Advance rank d by one operation; 0 when it is blocked or done. */
static int step(const replay_ctx *x, int d)
{
  replay_rank *r = &rr[d];
  if (r->pc == r->n)
    return 0;
  const op *o = &r->ops[r->pc];
  switch (o->kind) {
  case 'I':
    r->req = post_receive(x, d, o->peer, o->bytes, r->clock);
    break;
  case 'S': {
    hplsim_message_cost cost;
    price(x, d, o->peer, o->bytes, &cost);
    if (cost.detached) {
      r->clock += cost.send_overhead;
      post_message(x, d, o->peer, o->bytes, r->clock);
      break;
    }
    /* rendezvous: the send lasts until the transfer ends */
    if (r->stage == 0) {
      r->sent = post_message(x, d, o->peer, o->bytes, r->clock);
      r->stage = 1;
    }
    const post *m = &rr[o->peer].in[r->sent];
    if (!m->matched)
      return 0;
    r->clock = fmax(r->clock, m->arrival);
    r->stage = 0;
    break;
  }
  case 'R':
    if (r->stage == 0) {
      r->req = post_receive(x, d, o->peer, o->bytes, r->clock);
      r->stage = 1;
    }
    /* fall through */
  case 'W': {
    const post *q = &r->reqs[r->req];
    if (!q->matched)
      return 0;
    r->clock = fmax(r->clock, q->arrival) + q->recv_overhead;
    r->stage = 0;
    break;
  }
  }
  r->pc++;
  return 1;
}

/* Each rank's finishing time (s[process row].done) for the entries in s. */
static void replay(column_head *col, slot *s, int icurrow, int n0)
{
  int nprow = col->nprow;
  replay_ctx x = {col, s, icurrow, nprow};
  for (int d = 0; d < nprow; d++) {
    replay_rank *r = &rr[d];
    r->n = build_ops(d, nprow, n0, r->ops);
    for (int i = 0; i < r->n && exchange_mode() == MODELLED; i++)
      replayed_sends += r->ops[i].kind == 'S';
    r->pc = r->stage = r->req = r->sent = r->nin = r->nreqs = 0;
    r->clock = s[row_of(&x, d)].entry;
  }
  for (;;) {
    int progress = 0, finished = 1;
    for (int d = 0; d < nprow; d++) {
      while (step(&x, d))
        progress = 1;
      finished &= rr[d].pc == rr[d].n;
    }
    if (finished)
      break;
    if (!progress)
      hplsim_fatal("the modelled exchange's replay is stuck (P = %d): a defect, please report it", nprow);
  }
  for (int d = 0; d < nprow; d++)
    s[row_of(&x, d)].done = rr[d].clock;
}

/* HPL's combine keeps the partner's candidate when its magnitude is larger, or equal with
 * a lower owner: the largest in that order, whatever the order of the combines. */
static void winner(const slot *s, int nprow, double *best)
{
  int w = 0;
  for (int i = 1; i < nprow; i++) {
    double a = fabs(s[i].record[0]), b = fabs(s[w].record[0]);
    if (a > b || (a == b && s[i].record[3] < s[w].record[3]))
      w = i;
  }
  memcpy(best, s[w].record, 4 * sizeof(double));
}

/* ------------------------------------------------------------ the rank's side */

static unsigned long calls;   /* this rank's exchanges (each rank of a column counts alike) */
static struct {
  column_head *col;
  slot *me;
  int parity;
} pending;
/* checked: how far the model landed from the messages */
static long checked, winners_differ;
static double dt_sum, dt_abs_max;

int hplsim_mxswp_begin(double *work, int nprow, int myrow, int icurrow, int mycol, int npcol, int n0)
{
  int mode = exchange_mode();
  if (mode == MESSAGES) {
    calls++;
    return 0;
  }
  /* The compute before the exchange, which HPL's first MPI call would inject. Modelled, a
   * rank with its own core takes it into its entry time instead: one execution action less
   * per rank and exchange, the same simulated time (it sleeps it with the exchange). */
  double ahead = 0.0;
  if (mode == MODELLED && hplsim_owns_core())
    ahead = hplsim_take_pending();
  else
    hplsim_flush();
  map_area(nprow, npcol);
  column_head *col = column(mycol);
  if (col->nprow != nprow) { /* a new grid: the area was cleared */
    col->nprow = nprow;
    col->arrived = 0;
  }
  if (mode == MODELLED && !col->barrier)
    col->barrier = sg_barrier_init((unsigned)nprow);
  int parity = (int)(calls++ & 1);
  slot *all = slots(col, parity), *me = &all[myrow];
  memcpy(me->record, work, 4 * sizeof(double));
  me->entry = simgrid_get_clock() + ahead;
  me->host = sg_host_self();
  /* Ranks run one at a time: the last to arrive sees every entry and replays, in both
   * modes at the same point (checked: before the exchange's messages are sent). */
  if (++col->arrived == nprow) {
    col->arrived = 0;
    replay(col, all, icurrow, n0);
    winner(all, nprow, col->winner[parity]);
  }
  if (mode == CHECKED) {
    pending.col = col;
    pending.me = me;
    pending.parity = parity;
    return 0;
  }
  sg_barrier_wait(col->barrier);
  memcpy(work, col->winner[parity], 4 * sizeof(double));
  double wait = me->done - simgrid_get_clock();
  if (wait > 0)
    sg_actor_sleep_for(wait);
  if (hplsim_on_exchange) {
    op ops[MAX_OPS];
    int64_t bytes = 0;
    int n = build_ops((myrow - icurrow + nprow) % nprow, nprow, n0, ops);
    for (int i = 0; i < n; i++)
      bytes += ops[i].kind == 'S' ? ops[i].bytes : 0;
    hplsim_on_exchange(me->entry, bytes);
  }
  return 1;
}

void hplsim_mxswp_end(const double *work)
{
  if (exchange_mode() != CHECKED)
    return;
  /* Every rank's result depends on every rank's candidate: all have entered by now, and
   * the last of them has replayed the model. */
  double dt = pending.me->done - simgrid_get_clock();
  checked++;
  dt_sum += dt;
  if (fabs(dt) > dt_abs_max)
    dt_abs_max = fabs(dt);
  if (memcmp(pending.col->winner[pending.parity], work, 4 * sizeof(double)) != 0)
    winners_differ++;
}

void hplsim_exchange_report(FILE *out, int rank)
{
  static const char *names[] = {"modelled", "messages", "checked"};
  fprintf(out, "HPLSIM_EXCHANGES %d %s %lu sends:%lu replayed_sends:%lu", rank, names[exchange_mode()], calls,
          hplsim_sends(), replayed_sends);
  if (exchange_mode() == CHECKED)
    fprintf(out, " checked:%ld winners_differ:%ld dt_sum:%.17g dt_abs_max:%.17g", checked, winners_differ, dt_sum,
            dt_abs_max);
  fputc('\n', out);
}
