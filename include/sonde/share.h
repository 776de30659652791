/*
 * share.h - registered profiles shared through the repository's own git
 * remote: `sonde push` and `sonde pull`.
 *
 * The profiles travel as blobs of one commit history under refs/sonde/profiles
 * on the remote, a tree of ORIGIN/DIGEST.json (the commit a profile was
 * measured on, the store's digest of its JSON). A push adds the profiles the
 * remote does not have on top of the remote's latest commit and pushes
 * without force: when another clone pushed first, the push is refused and
 * made again on top of theirs, so concurrent pushes lose nothing. A pull
 * registers every profile of the remote's tree the store does not have.
 */
#ifndef SONDE_SHARE_H
#define SONDE_SHARE_H

#include <sonde/store.h>
#include <sonde/strbuf.h>

#define SONDE_SHARE_REF "refs/sonde/profiles"

struct sonde_share_result {
	unsigned sent;	   /* push: profiles the remote did not have */
	unsigned taken;	   /* pull: profiles registered here */
	unsigned known;	   /* already on the other side */
	unsigned remote;   /* profiles on the remote after the push, or in it (pull) */
	unsigned attempts; /* push: 1, more when another clone pushed meanwhile */
	unsigned refused;  /* pull: blobs that were not a profile (their reasons in err) */
};

/* Push the store's registered profiles to remote (a name or URL git knows). 0 or -errno, err. */
int sonde_share__push(struct sonde_store *s, const char *remote, struct sonde_share_result *r,
		      struct sonde_strbuf *err);
/* Register the remote's profiles the store does not have. 0 or -errno, with err. */
int sonde_share__pull(struct sonde_store *s, const char *remote, struct sonde_share_result *r,
		      struct sonde_strbuf *err);

#endif
