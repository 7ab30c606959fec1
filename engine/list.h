/*
 * This file is private to tensorverbs' engine: an intrusive doubly linked
 * list (circular, with a sentinel head), as in the Linux kernel and libuv.
 */
#ifndef TV_ENGINE_LIST_H
#define TV_ENGINE_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct tv_list {
	struct tv_list *next;
	struct tv_list *prev;
};

static inline void tv_list_init(struct tv_list *head)
{
	head->next = head;
	head->prev = head;
}

static inline bool tv_list_empty(const struct tv_list *head)
{
	return head->next == head;
}

/* A node that is on no list points at itself (after init or del). */
static inline bool tv_list_linked(const struct tv_list *node)
{
	return node->next != node;
}

static inline void tv_list_add_tail(struct tv_list *head, struct tv_list *node)
{
	node->prev = head->prev;
	node->next = head;
	head->prev->next = node;
	head->prev = node;
}

static inline void tv_list_del(struct tv_list *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
	tv_list_init(node);
}

static inline struct tv_list *tv_list_pop(struct tv_list *head)
{
	struct tv_list *node = head->next;

	if (node == head)
		return NULL;
	tv_list_del(node);
	return node;
}

#endif /* TV_ENGINE_LIST_H */
