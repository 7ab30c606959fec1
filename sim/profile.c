/*
 * Device profiles (enum tv_sim_profile): where ConnectX (mlx5) and Linux
 * rxe differ, the simulator does what the profile's device does.  The
 * differences and their sources are listed in docs/simulator.md, "Device
 * profiles"; this file holds the names and the values that differ.
 */
#include <errno.h>
#include <string.h>

#include "sim_priv.h"

const char *tv_sim_profile_str(enum tv_sim_profile profile)
{
	switch (profile) {
	case TV_SIM_PROFILE_MLX5: return "mlx5";
	case TV_SIM_PROFILE_RXE: return "rxe";
	}
	return NULL;
}

int tv_sim_profile_parse(const char *name, enum tv_sim_profile *profile_p)
{
	static const enum tv_sim_profile all[] = {
		TV_SIM_PROFILE_MLX5, TV_SIM_PROFILE_RXE,
	};

	for (size_t i = 0; name && i < sizeof(all) / sizeof(all[0]); i++) {
		if (!strcmp(name, tv_sim_profile_str(all[i]))) {
			*profile_p = all[i];
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * max_qp_rd_atom and max_qp_init_rd_atom when the config leaves them 0:
 * ConnectX reports 1 << log_max_ra_{req,res}_qp, 16 on the devices we
 * know; rxe RXE_MAX_QP_RD_ATOM and RXE_MAX_QP_INIT_RD_ATOM, both 128
 * (rxe_param.h; 128 measured in our rxe VM, docs/ibverbs.md).
 */
uint32_t sim_profile_rd_atom(enum tv_sim_profile profile)
{
	return profile == TV_SIM_PROFILE_RXE ? 128 : 16;
}

/*
 * The depth a QP keeps for a max_rd_atomic or max_dest_rd_atomic asked
 * at modify_qp, which query_qp then reports.  Both devices round up to a
 * power of two (mlx5 stores log2 in the QP context, fls(n - 1); rxe
 * roundup_pow_of_two).  They differ on 0: mlx5 leaves the log at 0, one
 * outstanding (and reports 1); rxe keeps 0, so its requester never sends
 * a READ or atomic and its responder NAKs every one.
 */
uint8_t sim_rd_atomic_depth(enum tv_sim_profile profile, uint8_t asked)
{
	uint32_t depth = 1;

	if (!asked)
		return profile == TV_SIM_PROFILE_RXE ? 0 : 1;
	while (depth < asked)
		depth <<= 1;
	assert(depth <= SIM_MAX_RD_ATOM);
	return (uint8_t)depth;
}
